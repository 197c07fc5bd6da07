"""``vta aws build | create-afi | wait | load | run``: every dry run, and each command for real
against stand-ins (a fake HDK checkout, botocore's Stubber, fake management tools, the
simulated wrapper)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import vta
from vta.aws import afi as afimod
from vta.cli import main
from vta.hdltools import hdlgen
from vta.progfile import handbuilt as programs

botocore = pytest.importorskip("botocore")
from botocore.stub import ANY, Stubber  # noqa: E402
from hdk_standin import READ_LINE, fake_hdk  # noqa: E402


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_build_f2_dry_run_then_for_real(tmp_path):
    hdk = fake_hdk(tmp_path / "aws-fpga", "f2")
    cl = hdk / "hdk" / "cl" / "examples" / "cl_vta"
    dry = invoke("aws", "build", "--hdk", hdk, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert f"copy folder {hdk}/hdk/cl/examples/CL_TEMPLATE -> {cl}" in dry.output
    assert f"write {cl}/design/cl_vta.sv" in dry.output
    assert f"copy {vta.hdltools.build.hdl_dir()}/aws/vta_aws_f2.v -> {cl}/design/vta_aws_f2.v" \
        in dry.output
    assert ("run: bash -c 'cd " + str(hdk) + " && source hdk_setup.sh && export CL_DIR=" + str(cl)
            + " && cd " + str(cl) + "/build/scripts && ./aws_build_dcp_from_cl.py -c cl_vta "
            "--mode small_shell'") in dry.output
    assert not cl.exists()  # a dry run changes nothing

    result = invoke("aws", "build", "--hdk", hdk)
    assert result.exit_code == 0, result.output
    assert (cl / "called.txt").read_text().strip() == (
        f"-c cl_vta --mode small_shell|{cl}|1|{cl}/build/scripts")
    top = (cl / "design" / "cl_vta.sv").read_text()
    assert "module cl_vta (\n`include \"cl_ports.vh\"" in top
    assert "sh_ddr #(.DDR_PRESENT(1)) SH_DDR" in top and "vta_aws_f2 #(" in top
    assert f".CONFIG_SIG({vta.Config.load('aws').signature})" in top
    synth = (cl / "build" / "scripts" / "synth_cl_vta.tcl").read_text()
    assert READ_LINE["f2"] not in synth  # read by tests/aws/test_aws_hdk.py in tclsh
    assert "cl_ddr4_64g_ap/cl_ddr4_64g_ap.xci" in synth
    assert not (cl / "build" / "scripts" / "synth_CL_TEMPLATE.tcl").exists()
    assert not (cl / "design" / "CL_TEMPLATE.sv").exists()
    # every header an `include names, generated for the preset (vta_gemm.vh was missing once)
    for name in ("vta_top.v", "vta_aws_cl.v", "vta_aws_regs.vh", *hdlgen.HEADERS):
        assert (cl / "design" / name).is_file(), name
    assert (cl / "design" / "vta_mem_fields.vh").read_text() == \
        hdlgen.render_mem_fields(vta.Config.load("aws"))
    again = CliRunner().invoke(main, ["aws", "build", "--hdk", str(hdk)])
    assert again.exit_code == 1 and "exists; pass --force to replace it" in again.output


def test_build_f1_renames_the_template_and_lists_the_sources(tmp_path):
    hdk = fake_hdk(tmp_path / "aws-fpga", "f1")
    cl = hdk / "hdk" / "cl" / "developer_designs" / "cl_vta"
    result = invoke("aws", "build", "--shell", "f1", "--hdk", hdk, "--clock-recipe", "A1",
                    "--config", "default")
    assert result.exit_code == 0, result.output
    scripts = cl / "build" / "scripts"
    assert (cl / "called.txt").read_text().strip() == "cl_vta -clock_recipe_a A1 -foreground"
    assert (scripts / "synth_cl_vta.tcl").is_file()
    assert (scripts / "create_dcp_from_cl.tcl").read_text() == "set CL_MODULE cl_vta\n"
    encrypt = (scripts / "encrypt.tcl").read_text()
    assert "cl_hello_world.sv" not in encrypt and "\nencrypt -k " in encrypt  # head and tail kept
    assert "file copy -force $CL_DIR/design/vta_aws_f1.v $TARGET_DIR" in encrypt
    assert "unused_ddr_a_b_d_template.inc" in encrypt
    for name in hdlgen.HEADERS:  # every generated header goes through encrypt.tcl
        assert f"file copy -force $CL_DIR/design/{name} $TARGET_DIR" in encrypt, name
    top = (cl / "design" / "cl_vta.sv").read_text()
    assert '`include "unused_ddr_a_b_d_template.inc"' in top and "vta_aws_f1 #(" in top
    assert ".LOG_BUS_WIDTH(6)" in top  # the default preset


@pytest.mark.parametrize("args,message", [
    (["--shell", "f2", "--clock-recipe", "A1"], "--clock-recipe applies to F1 only"),
    (["--cl-name", "cl-vta"], "the CL name must be a Verilog identifier, not 'cl-vta'"),
])
def test_build_refuses(tmp_path, args, message):
    hdk = fake_hdk(tmp_path / "aws-fpga", "f2")
    result = CliRunner().invoke(main, ["aws", "build", "--hdk", str(hdk), "--dry-run", *args])
    assert result.exit_code == 1 and message in result.output, result.output
    result = CliRunner().invoke(main, ["aws", "build", "--hdk", str(tmp_path), "--dry-run"])
    assert "is not an aws-fpga checkout (no hdk_setup.sh)" in result.output


# ------------------------------------------------------------------- AFIs
def _stubbed(monkeypatch, service):
    import boto3

    client = boto3.client(service, region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    stub = Stubber(client)
    monkeypatch.setattr(afimod, "_client", lambda s, region: client)
    return client, stub


def test_create_afi_dry_run_and_request(tmp_path, monkeypatch):
    tar = tmp_path / "24_01_01-0000.Developer_CL.tar"
    tar.write_bytes(b"dcp")
    dry = invoke("aws", "create-afi", tar, "--bucket", "vta-dcp", "--dry-run")
    assert dry.output == (
        f"upload {tar} -> s3://vta-dcp/dcp/{tar.name}\n"
        "ec2 CreateFpgaImage {'Name': 'vta', 'InputStorageLocation': {'Bucket': 'vta-dcp', 'Key': "
        f"'dcp/{tar.name}'}}, 'LogsStorageLocation': {{'Bucket': 'vta-dcp', 'Key': 'logs/'}}, "
        "'Description': 'VTA deep-learning accelerator'}\n")
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_response("create_fpga_image", {"FpgaImageId": "afi-0abc", "FpgaImageGlobalId":
                                            "agfi-0def"},
                      {"Name": "vta", "Description": "VTA deep-learning accelerator",
                       "InputStorageLocation": {"Bucket": "vta-dcp", "Key": "dcp/x.tar"},
                       "LogsStorageLocation": {"Bucket": "vta-logs", "Key": "logs/"}})
    with stub:  # an object already in the bucket: no upload
        result = invoke("aws", "create-afi", "dcp/x.tar", "--bucket", "vta-dcp",
                        "--logs-bucket", "vta-logs",
                        "--json")
    assert json.loads(result.output) == {"FpgaImageId": "afi-0abc",
                                         "FpgaImageGlobalId": "agfi-0def"}
    stub.assert_no_pending_responses()


def test_create_afi_uploads_a_local_tarball(tmp_path, monkeypatch):
    import boto3

    tar = tmp_path / "build.tar"
    tar.write_bytes(b"dcp bytes")
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x",
                      aws_secret_access_key="x")
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x",
                       aws_secret_access_key="x")
    s3_stub, ec2_stub = Stubber(s3), Stubber(ec2)
    req = afimod.CreateRequest("vta", "b", "dcp/build.tar", "b", "logs/", upload=tar)
    s3_stub.add_response("put_object", {}, {"Bucket": "b", "Key": "dcp/build.tar", "Body": ANY,
                                            "ChecksumAlgorithm": ANY})
    ec2_stub.add_response("create_fpga_image", {"FpgaImageId": "afi-1", "FpgaImageGlobalId":
                                                "agfi-1"}, req.params())
    with s3_stub, ec2_stub:
        ids = afimod.create_afi(req, s3=s3, ec2=ec2)
    assert ids == {"FpgaImageId": "afi-1", "FpgaImageGlobalId": "agfi-1"}
    s3_stub.assert_no_pending_responses()


AFI = "afi-0123456789abcdef0"
AGFI = "agfi-0123456789abcdef0"


def _one_line_error(result, *parts):
    """The command failed with exit 1 and one line that holds every one of ``parts``."""
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.mark.parametrize("code,message,says", [
    ("UnauthorizedOperation", "You are not authorized to perform this operation.",
     "was denied (UnauthorizedOperation: You are not authorized to perform this operation.); "
     "the AWS identity needs ec2:CreateFpgaImage"),
    ("RequestLimitExceeded", "Request limit exceeded.",
     "AWS is throttling requests (RequestLimitExceeded: Request limit exceeded.); wait a "
     "minute and run the command again"),
    ("AuthFailure", "AWS was not able to validate the provided access credentials",
     "the AWS credentials were refused (AuthFailure"),
])
def test_create_afi_api_errors_are_one_line(monkeypatch, code, message, says):
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_client_error("create_fpga_image", code, message, http_status_code=403)
    with stub:
        result = CliRunner().invoke(main, ["aws", "create-afi", "dcp/x.tar", "--bucket",
                                           "vta-dcp"])
    _one_line_error(result, "AfiError: CreateFpgaImage for s3://vta-dcp/dcp/x.tar", says)


def _upload_error(monkeypatch, tmp_path, code, message, headers=None, status=403):
    s3, stub = _stubbed(monkeypatch, "s3")
    tar = tmp_path / "build.tar"
    tar.write_bytes(b"dcp")
    stub.add_client_error("put_object", code, message, http_status_code=status,
                          response_meta={"HTTPHeaders": headers or {}})
    with stub:
        return CliRunner().invoke(main, ["aws", "create-afi", str(tar), "--bucket", "vta-dcp"])


def test_upload_denied_is_one_line(monkeypatch, tmp_path):
    result = _upload_error(monkeypatch, tmp_path, "AccessDenied", "Access Denied")
    _one_line_error(result, "uploading", "s3://vta-dcp/dcp/build.tar was denied "
                    "(AccessDenied: Access Denied); the AWS identity needs s3:PutObject on "
                    "vta-dcp")


def test_bucket_in_another_region_names_it(monkeypatch, tmp_path):
    result = _upload_error(monkeypatch, tmp_path, "AuthorizationHeaderMalformed",
                           "The authorization header is malformed; the region 'us-east-1' is "
                           "wrong; expecting 'eu-west-2'", status=400)
    _one_line_error(result, "bucket vta-dcp is in another region (eu-west-2); pass --region "
                            "eu-west-2")
    result = _upload_error(monkeypatch, tmp_path, "PermanentRedirect",
                           "The bucket you are attempting to access must be addressed using "
                           "the specified endpoint.", {"x-amz-bucket-region": "us-west-2"},
                           status=301)
    _one_line_error(result, "is in another region (us-west-2); pass --region us-west-2")


def test_create_afi_usage_errors():
    """Bucket and key names and s3:// URLs are checked before anything is sent (exit 2)."""
    for args, says in [
        (["dcp/x.tar", "--bucket", ""], "'' is not an S3 bucket name: it is empty"),
        (["dcp/x.tar", "--bucket", "My_Bucket"], "may hold only lowercase letters"),
        (["dcp/x.tar", "--bucket", "ab"], "has 2 characters (3 to 63)"),
        (["dcp/x.tar", "--bucket", "a..b"], "has two dots in a row"),
        (["dcp/x.tar", "--bucket", "b12", "--key", ""], "'' is not an S3 key: it is empty"),
        (["dcp/x.tar", "--bucket", "b12", "--logs-bucket", "-b"], "is not an S3 bucket name"),
        (["dcp/x.tar"], "is needed unless TARBALL is s3://BUCKET/KEY"),
        (["s3://b12/"], "is not s3://BUCKET/KEY: its key is empty"),
        (["s3:///x.tar"], "is not s3://BUCKET/KEY: its bucket is empty"),
        (["s3://b12/x.tar", "--bucket", "b34"], "names bucket and key already"),
    ]:
        result = CliRunner().invoke(main, ["aws", "create-afi", *args, "--dry-run"])
        assert result.exit_code == 2 and says in result.output, (args, result.output)
    ok = invoke("aws", "create-afi", "s3://b12/dcp/x.tar", "--dry-run")
    assert "'InputStorageLocation': {'Bucket': 'b12', 'Key': 'dcp/x.tar'}" in ok.output


def _image(code, message=""):
    return {"FpgaImages": [{"FpgaImageId": AFI, "State": {"Code": code, "Message": message}}]}


class _Clock:
    """time.monotonic and time.sleep of a test: sleeping advances the clock."""

    def __init__(self):
        self.now, self.slept = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_wait_polls_until_available(monkeypatch):
    ec2, stub = _stubbed(monkeypatch, "ec2")
    for code in ("pending", "pending", "available"):
        stub.add_response("describe_fpga_images", _image(code), {"FpgaImageIds": [AFI]})
    clock, seen = _Clock(), []
    with stub:
        assert afimod.wait_afi(AFI, ec2=ec2, interval=30, sleep=clock.sleep, clock=clock,
                               report=lambda c, m, w: seen.append((c, w))) == "available"
    assert clock.slept == [30, 30] and seen == [("pending", 0), ("pending", 30),
                                                ("available", 60)]
    assert invoke("aws", "wait", AFI, "--dry-run").output.startswith(
        f"ec2 DescribeFpgaImages {{'FpgaImageIds': ['{AFI}']}} every 60 s")


def test_wait_backs_off_when_throttled(monkeypatch):
    """A throttled poll is retried after twice the interval (and twice again), then the
    interval returns; the state and the time waited are reported every poll."""
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_response("describe_fpga_images", _image("pending"), {"FpgaImageIds": [AFI]})
    stub.add_client_error("describe_fpga_images", "RequestLimitExceeded", "slow down")
    stub.add_client_error("describe_fpga_images", "RequestLimitExceeded", "slow down")
    stub.add_response("describe_fpga_images", _image("pending"), {"FpgaImageIds": [AFI]})
    stub.add_response("describe_fpga_images", _image("available"), {"FpgaImageIds": [AFI]})
    clock, seen = _Clock(), []
    with stub:
        afimod.wait_afi(AFI, ec2=ec2, interval=10, sleep=clock.sleep, clock=clock,
                        report=lambda c, m, w: seen.append((c, w)))
    assert clock.slept == [10, 20, 40, 10]
    assert seen == [("pending", 0), ("throttled", 10), ("throttled", 30), ("pending", 70),
                    ("available", 80)]


def test_wait_reports_a_failed_afi_with_what_to_do(monkeypatch):
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_response("describe_fpga_images",
                      _image("failed", "INACCESSIBLE_INPUT: Error accessing\n resource in S3"),
                      {"FpgaImageIds": [AFI]})
    with stub:
        result = CliRunner().invoke(main, ["aws", "wait", AFI])
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{AFI}: failed (INACCESSIBLE_INPUT") and result.exit_code == 1
    assert lines[-1] == (f"Error: AfiError: AFI {AFI} is failed: INACCESSIBLE_INPUT: Error "
                         "accessing resource in S3; AWS could not read the tarball: check that "
                         "the bucket is in the region the AFI was created in (--region) and "
                         "that its policy lets EC2 read it, then run create-afi again")
    for bad in ("agfi-0123456789abcdef0", "afi-", "afi-XYZ12345", ""):
        result = CliRunner().invoke(main, ["aws", "wait", bad])
        assert result.exit_code == 2 and "must be an AFI ID (afi- and hex digits)" \
            in result.output, bad


def test_wait_ctrl_c_exits_130(monkeypatch):
    """Ctrl-C while waiting: exit status 130 and a line that says how to wait again."""
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_response("describe_fpga_images", _image("pending"), {"FpgaImageIds": [AFI]})

    def interrupted(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr("time.sleep", interrupted)
    with stub:
        result = CliRunner().invoke(main, ["aws", "wait", AFI])
    assert result.exit_code == 130
    assert result.output.splitlines()[-1] == (
        f"vta: stopped waiting for {AFI} (last seen pending, 0s waited); its creation goes on: "
        f"`vta aws wait {AFI}` waits again")


def _bare_env(tmp_path: Path) -> dict:
    """An environment with no AWS configuration: no region, no credentials, no config
    files, and no instance metadata service to ask (this is not an EC2 instance)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH", ""), str(Path(vta.__file__).parents[1])) if p),
        "AWS_CONFIG_FILE": str(home / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"),
        "AWS_EC2_METADATA_DISABLED": "true"}


def test_configuration_errors_in_an_empty_environment(tmp_path, monkeypatch):
    """No region and no credentials: one line each naming what to set, exit 1, nothing
    sent (the upload is not tried without a region).  The commands run in this process
    with the environment of :func:`_bare_env` (a process of its own: the Ctrl-C test)."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in _bare_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    tar = tmp_path / "build.tar"
    tar.write_bytes(b"dcp")
    for args, says in [
        (["create-afi", "dcp/x.tar", "--bucket", "vta-dcp"],
         "no AWS region is configured: pass --region REGION, set AWS_REGION, or run "
         "`aws configure`"),
        (["create-afi", str(tar), "--bucket", "vta-dcp"], "no AWS region is configured"),
        (["wait", AFI], "no AWS region is configured"),
        (["create-afi", str(tar), "--bucket", "vta-dcp", "--region", "us-east-1"],
         f"uploading {tar} to s3://vta-dcp/dcp/build.tar: no AWS credentials were found; run "
         "`aws configure`, set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the "
         "instance an IAM role"),
        (["create-afi", "dcp/x.tar", "--bucket", "vta-dcp", "--region", "us-east-1"],
         "CreateFpgaImage for s3://vta-dcp/dcp/x.tar: no AWS credentials were found"),
        (["wait", AFI, "--region", "us-east-1"],
         f"DescribeFpgaImages for {AFI}: no AWS credentials were found"),
    ]:
        result = CliRunner().invoke(main, ["aws", *args])
        _one_line_error(result, says)


def test_wait_ctrl_c_in_a_real_process(tmp_path):
    """SIGINT to a waiting `vta aws wait`: exit status 130 and how to wait again."""
    driver = tmp_path / "driver.py"
    driver.write_text(f"""
import signal

import boto3
from botocore.stub import Stubber
from vta.aws import afi
from vta.cli import main

ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x",
                   aws_secret_access_key="x")
stub = Stubber(ec2)
pending = {{"FpgaImages": [{{"FpgaImageId": "{AFI}", "State": {{"Code": "pending"}}}}]}}
for _ in range(100):
    stub.add_response("describe_fpga_images", pending)
stub.activate()
afi._client = lambda service, region: ec2
# as from an interactive shell (a job started in the background has SIGINT ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
main(["aws", "wait", "{AFI}", "--interval", "1"])
""")
    proc = subprocess.Popen([sys.executable, str(driver)], env=_bare_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()  # the first poll's progress line
        assert first.startswith(f"{AFI}: pending, 0s waited"), first
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == (f"vta: stopped waiting for {AFI} (last seen pending, 0s "
                                    f"waited); its creation goes on: `vta aws wait {AFI}` "
                                    "waits again")


# ------------------------------------------------------------------- load
def _fake_sudo(tmp_path: Path, fail: str = "") -> dict:
    """A `sudo` on PATH that logs each command (and fails the one containing ``fail``)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "sudo.log"
    _executable(bindir / "sudo", f"""#!/bin/sh
echo "$@" >> {log}
case "$*" in *"{fail or '@@none@@'}"*) echo "slot busy" >&2; exit 1;; esac
echo "AFI 0 agfi-0123 loaded 0 ok 0 0x04261818"
""")
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "log": str(log)}


def test_load_dry_run_and_for_real(tmp_path):
    dry = invoke("aws", "load", AGFI, "--slot", "2", "--force", "--dry-run")
    assert dry.output == ("sudo fpga-clear-local-image -S 2\n"
                          f"sudo fpga-load-local-image -S 2 -I {AGFI} -F\n"
                          "sudo fpga-describe-local-image -S 2 -R -H\n")
    env = _fake_sudo(tmp_path)
    result = CliRunner().invoke(main, ["aws", "load", AGFI], env={"PATH": env["PATH"]})
    assert result.exit_code == 0 and "loaded" in result.output
    assert Path(env["log"]).read_text().splitlines() == [
        "fpga-clear-local-image -S 0", f"fpga-load-local-image -S 0 -I {AGFI}",
        "fpga-describe-local-image -S 0 -R -H"]


def test_load_failure_and_bad_ids(tmp_path):
    env = _fake_sudo(tmp_path, fail="fpga-load-local-image")
    result = CliRunner().invoke(main, ["aws", "load", AGFI], env={"PATH": env["PATH"]})
    _one_line_error(result, f"`sudo fpga-load-local-image -S 0 -I {AGFI}` failed (exit 1): "
                            "slot busy")
    assert len(Path(env["log"]).read_text().splitlines()) == 2  # describe was not run
    for bad in (AFI, "agfi-", "agfi-0123 -F", ""):
        result = CliRunner().invoke(main, ["aws", "load", bad, "--dry-run"])
        assert result.exit_code == 2 and "must be a global AFI ID (agfi- and hex digits)" \
            in result.output, bad


# ------------------------------------------------------------------- run
@pytest.fixture(scope="module")
def matmul_program(tmp_path_factory):
    """A program file recorded on the golden model (tiny preset), with its outputs."""
    path = tmp_path_factory.mktemp("prog") / "matmul.vtaprog"
    cfg = vta.Config.load("tiny")
    prog = programs.build_matmul(cfg, 8, 16, 8)
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (8, 16), dtype=np.int8)
    w = rng.integers(-128, 128, (8, 16), dtype=np.int8)
    with vta.open_device("golden", cfg) as dev:
        prog.write(dev.driver.transport.mem, a, w)
        dev.run(prog.insn_addr, prog.insn_count, capture=path)
    return path


def test_run_dry_run(matmul_program):
    result = invoke("aws", "run", matmul_program, "--shell", "f1", "--slot", "3", "--dry-run")
    lines = result.output.splitlines()
    assert lines[0] == "open f1 slot 3 with configuration tiny (1x4_i8w8a32_10_9_10_11)"
    assert any(line.startswith("place ") for line in lines)
    assert lines[-2].startswith("run ") and lines[-1].startswith("compare ")


@pytest.mark.sim
def test_run_on_the_simulated_card(matmul_program):
    """`vta aws run --sim` replays the program through the F2 wrapper and checks its outputs."""
    result = invoke("aws", "run", matmul_program, "--sim", "--simulator", "icarus", "--json")
    summary = json.loads(result.stdout)
    assert summary["backend"] == "f2-sim" and summary["mismatches"] == []
    assert summary["cycles"] > 0


def test_run_without_a_card_says_where_it_runs(matmul_program):
    result = CliRunner().invoke(main, ["aws", "run", str(matmul_program)])
    assert result.exit_code == 1
    assert "no AWS FPGA slot found" in result.output


def test_demo_on_f2_without_a_card():
    """`vta demo -b f2` on a machine without an FPGA says where the backend runs."""
    result = CliRunner().invoke(main, ["demo", "-b", "f2", "-c", "aws"])
    assert result.exit_code == 1
    assert "no AWS FPGA slot found" in result.output
    assert "the f1/f2 backends run on an F1 or F2 instance only" in result.output
