"""``vta aws build | create-afi | wait | load | run``: every dry run, and each command for real
against stand-ins (a fake HDK checkout, botocore's Stubber, fake management tools, the
simulated wrapper)."""

from __future__ import annotations

import json
import os
import stat
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

CL_PORTS_READ = "read_verilog -sv [glob ${src_post_enc_dir}/*.?v]"


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def fake_hdk(root: Path) -> Path:
    """An aws-fpga checkout with just what `vta aws build` reads and runs."""
    root.mkdir()
    (root / "hdk_setup.sh").write_text("export HDK_SETUP_SOURCED=1\n")
    t2 = root / "hdk" / "cl" / "examples" / "CL_TEMPLATE"
    (t2 / "build" / "scripts").mkdir(parents=True)
    (t2 / "build" / "constraints").mkdir()
    (t2 / "build" / "constraints" / "cl_synth_user.xdc").write_text("# user\n")
    (t2 / "design").mkdir()
    (t2 / "design" / "CL_TEMPLATE.sv").write_text("module CL_TEMPLATE; endmodule\n")
    (t2 / "build" / "scripts" / "synth_CL_TEMPLATE.tcl").write_text(
        f"source header\n{CL_PORTS_READ}\nsynth_design -top ${{CL}}\n")
    # the F2 build script: records how it was called
    _executable(t2 / "build" / "scripts" / "aws_build_dcp_from_cl.py",
                "#!/bin/sh\necho \"$@|$CL_DIR|$HDK_SETUP_SOURCED|$(pwd)\" > ../../called.txt\n")
    t1 = root / "hdk" / "cl" / "examples" / "cl_hello_world" / "build" / "scripts"
    t1.mkdir(parents=True)
    (t1 / "encrypt.tcl").write_text("set TARGET_DIR x\n#---- Developr would replace this "
                                    "section with design files ----\nfile copy hello.sv\n"
                                    "#---- End of section replaced by Developr ---\nencrypt\n")
    (t1 / "synth_cl_hello_world.tcl").write_text("read_verilog -sv [glob $ENC_SRC_DIR/*.?v]\n")
    (t1 / "create_dcp_from_cl.tcl").write_text("set CL_MODULE cl_hello_world\n")
    _executable(t1 / "aws_build_dcp_from_cl.sh", "#!/bin/sh\necho cl_hello_world \"$@\" > "
                                                 "../../called.txt\n")
    (root / "hdk" / "cl" / "developer_designs").mkdir(parents=True)
    return root


def test_build_f2_dry_run_then_for_real(tmp_path):
    hdk = fake_hdk(tmp_path / "aws-fpga")
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
    assert CL_PORTS_READ + "\n# VTA: headers beside the sources" in synth
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
    hdk = fake_hdk(tmp_path / "aws-fpga")
    cl = hdk / "hdk" / "cl" / "developer_designs" / "cl_vta"
    result = invoke("aws", "build", "--shell", "f1", "--hdk", hdk, "--clock-recipe", "A1",
                    "--config", "default")
    assert result.exit_code == 0, result.output
    scripts = cl / "build" / "scripts"
    assert (cl / "called.txt").read_text().strip() == "cl_vta -clock_recipe_a A1 -foreground"
    assert (scripts / "synth_cl_vta.tcl").is_file()
    assert (scripts / "create_dcp_from_cl.tcl").read_text() == "set CL_MODULE cl_vta\n"
    encrypt = (scripts / "encrypt.tcl").read_text()
    assert "hello.sv" not in encrypt and encrypt.endswith("encrypt\n")
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
    hdk = fake_hdk(tmp_path / "aws-fpga")
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
    dry = invoke("aws", "create-afi", tar, "--bucket", "b", "--dry-run")
    assert dry.output == (
        f"upload {tar} -> s3://b/dcp/{tar.name}\n"
        "ec2 CreateFpgaImage {'Name': 'vta', 'InputStorageLocation': {'Bucket': 'b', 'Key': "
        f"'dcp/{tar.name}'}}, 'LogsStorageLocation': {{'Bucket': 'b', 'Key': 'logs/'}}, "
        "'Description': 'VTA deep-learning accelerator'}\n")
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_response("create_fpga_image", {"FpgaImageId": "afi-0abc", "FpgaImageGlobalId":
                                            "agfi-0def"},
                      {"Name": "vta", "Description": "VTA deep-learning accelerator",
                       "InputStorageLocation": {"Bucket": "b", "Key": "dcp/x.tar"},
                       "LogsStorageLocation": {"Bucket": "l", "Key": "logs/"}})
    with stub:  # an object already in the bucket: no upload
        result = invoke("aws", "create-afi", "dcp/x.tar", "--bucket", "b", "--logs-bucket", "l",
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


def test_create_afi_refused(monkeypatch):
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_client_error("create_fpga_image", "UnauthorizedOperation", "not allowed")
    with stub:
        result = CliRunner().invoke(main, ["aws", "create-afi", "k", "--bucket", "b"])
    assert result.exit_code == 1
    assert "AfiError: CreateFpgaImage was refused" in result.output
    assert "UnauthorizedOperation" in result.output


def _image(code, message=""):
    return {"FpgaImages": [{"FpgaImageId": "afi-1", "State": {"Code": code,
                                                              "Message": message}}]}


def test_wait_polls_until_available(monkeypatch):
    ec2, stub = _stubbed(monkeypatch, "ec2")
    for code in ("pending", "pending", "available"):
        stub.add_response("describe_fpga_images", _image(code), {"FpgaImageIds": ["afi-1"]})
    slept, seen = [], []
    with stub:
        assert afimod.wait_afi("afi-1", ec2=ec2, interval=30, sleep=slept.append,
                               report=lambda c, m, w: seen.append((c, w))) == "available"
    assert slept == [30, 30] and seen == [("pending", 0), ("pending", 30), ("available", 60)]
    assert invoke("aws", "wait", "afi-1", "--dry-run").output.startswith(
        "ec2 DescribeFpgaImages {'FpgaImageIds': ['afi-1']} every 60 s")


def test_wait_reports_a_failed_afi(monkeypatch):
    ec2, stub = _stubbed(monkeypatch, "ec2")
    stub.add_response("describe_fpga_images", _image("failed", "DCP was built with errors"),
                      {"FpgaImageIds": ["afi-1"]})
    with stub:
        result = CliRunner().invoke(main, ["aws", "wait", "afi-1"])
    assert result.exit_code == 1
    assert "AFI afi-1 is failed: DCP was built with errors" in result.output
    bad = CliRunner().invoke(main, ["aws", "wait", "agfi-1"])
    assert bad.exit_code == 2 and "must be an AFI ID (afi-...), not 'agfi-1'" in bad.output


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
    dry = invoke("aws", "load", "agfi-0123", "--slot", "2", "--force", "--dry-run")
    assert dry.output == ("sudo fpga-clear-local-image -S 2\n"
                          "sudo fpga-load-local-image -S 2 -I agfi-0123 -F\n"
                          "sudo fpga-describe-local-image -S 2 -R -H\n")
    env = _fake_sudo(tmp_path)
    result = CliRunner().invoke(main, ["aws", "load", "agfi-0123"], env={"PATH": env["PATH"]})
    assert result.exit_code == 0 and "loaded" in result.output
    assert Path(env["log"]).read_text().splitlines() == [
        "fpga-clear-local-image -S 0", "fpga-load-local-image -S 0 -I agfi-0123",
        "fpga-describe-local-image -S 0 -R -H"]


def test_load_failure_and_bad_ids(tmp_path):
    env = _fake_sudo(tmp_path, fail="fpga-load-local-image")
    result = CliRunner().invoke(main, ["aws", "load", "agfi-0123"], env={"PATH": env["PATH"]})
    assert result.exit_code == 1
    assert "`sudo fpga-load-local-image -S 0 -I agfi-0123` failed (exit 1): slot busy" \
        in result.output
    assert len(Path(env["log"]).read_text().splitlines()) == 2  # describe was not run
    bad = CliRunner().invoke(main, ["aws", "load", "afi-0123", "--dry-run"])
    assert bad.exit_code == 1 and "load takes the global AFI ID (agfi-...)" in bad.output


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
