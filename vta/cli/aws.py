"""``vta aws``: build the custom logic, register and wait for the AFI, load it, run programs.

Every command takes ``--dry-run``: it prints exactly the files it would write, the
commands it would run or the requests it would send, and does nothing else.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from .common import EXIT_INTERRUPTED, Differ, echo_json, friendly, load_config, output_option


def _bucket(ctx, param, value):
    """A click callback: ``value`` is an S3 bucket name (or None), else a usage error."""
    from ..aws.afi import bucket_problem

    if value is not None and (why := bucket_problem(value)):
        raise click.BadParameter(f"{value!r} is not an S3 bucket name: it {why}")
    return value


def _key(ctx, param, value):
    """A click callback: ``value`` is an S3 object key (or None), else a usage error."""
    from ..aws.afi import key_problem

    if value is not None and (why := key_problem(value)):
        raise click.BadParameter(f"{value!r} is not an S3 key: it {why}")
    return value


def _afi_id(pattern: str, what: str):
    def check(ctx, param, value):
        from ..aws import afi

        if not getattr(afi, pattern).fullmatch(value):
            raise click.BadParameter(f"must be {what}, not {value!r}")
        return value
    return check


@click.group("aws")
def aws_cmd() -> None:
    """Build, register, load and run VTA on AWS FPGAs (F1, F2).

    \b
    From a fresh F2 instance to a result (docs/aws.md):
      vta aws build --hdk ~/aws-fpga            # Vivado: a DCP tarball (hours)
      vta aws create-afi build.tar --bucket B   # prints afi-... and agfi-...
      vta aws wait afi-...
      vta aws load agfi-...
      vta aws run prog.vtaprog
    """


# ------------------------------------------------------------------- build
@aws_cmd.command()
@click.option("--shell", type=click.Choice(["f1", "f2"]), default="f2", show_default=True,
              help="the AWS shell to build for")
@output_option("--hdk", folder=True, exists=True, envvar="AWS_FPGA_REPO_DIR", required=True,
               help="an aws-fpga checkout (master for F1, f2 for F2), written into "
                    "[$AWS_FPGA_REPO_DIR]")
@click.option("--config", "-c", "config", default="aws", show_default=True,
              help="VTA configuration: a preset or a vta_config.json path")
@click.option("--cl-name", default="cl_vta", show_default=True, help="custom-logic name")
@click.option("--clock-recipe", default="A0", show_default=True,
              help="F1 clk_main_a0 recipe: A0 125 MHz, A1 250 MHz, A2 15.625 MHz")
@click.option("--force", is_flag=True, help="replace an existing custom-logic folder")
@click.option("--no-run", is_flag=True, help="write the folder, do not start Vivado")
@click.option("--dry-run", is_flag=True, help="print the plan, change nothing")
@friendly
def build(shell: str, hdk: Path, config: str, cl_name: str, clock_recipe: str, force: bool,
          no_run: bool, dry_run: bool) -> None:
    """Put VTA and its wrapper into the HDK as custom logic and run the HDK's build.

    The build (Vivado, several hours, 32 GiB of memory or more) leaves
    build/checkpoints/*.Developer_CL.tar in the custom-logic folder: the input of
    `vta aws create-afi`.
    """
    from ..aws.hdk import execute, plan_build

    cfg = load_config(config)
    plan = plan_build(shell, hdk, cfg, cl_name=cl_name, clock_recipe=clock_recipe,
                      force=force or dry_run)
    if dry_run:
        click.echo(plan.describe(), nl=False)
        return
    code = execute(plan, run=not no_run)
    if code:
        raise click.ClickException(f"the HDK build exited with status {code} (logs in "
                                   f"{plan.cl_dir / 'build'})")
    click.echo(f"{plan.cl_dir}: " + ("written" if no_run else
                                     "built; the tarball is in build/checkpoints"))


# ------------------------------------------------------------------- create-afi
@aws_cmd.command("create-afi")
@click.argument("tarball")
@click.option("--bucket", callback=_bucket,
              help="S3 bucket for the DCP tarball (not needed when TARBALL is s3://...)")
@click.option("--key", default=None, callback=_key,
              help="S3 key of the tarball (default: dcp/<file name>)")
@click.option("--name", default="vta", show_default=True, help="AFI name")
@click.option("--description", default="VTA deep-learning accelerator", show_default=True)
@click.option("--logs-bucket", default=None, callback=_bucket,
              help="S3 bucket for the logs (default: the tarball's bucket)")
@click.option("--logs-key", default="logs/", show_default=True, callback=_key,
              help="S3 prefix for the logs")
@click.option("--region", default=None, help="AWS region (default: your AWS configuration's)")
@click.option("--dry-run", is_flag=True, help="print the upload and the request, send nothing")
@click.option("--json", "as_json", is_flag=True, help="print the IDs as JSON")
@friendly
def create_afi_cmd(tarball: str, bucket: str | None, key: str | None, name: str,
                   description: str, logs_bucket: str | None, logs_key: str, region: str | None,
                   dry_run: bool, as_json: bool) -> None:
    """Register a DCP tarball as an AFI (uploads TARBALL first when it is a local file).

    TARBALL is a local file (uploaded to --bucket), s3://BUCKET/KEY, or the key of a
    tarball already in --bucket.
    """
    from ..aws.afi import CreateRequest, bucket_problem, create_afi, key_problem, split_s3_url

    local = Path(tarball)
    upload = local if local.is_file() else None
    if upload is None and tarball.startswith("s3://"):
        url_bucket, url_key = split_s3_url(tarball)
        for what, why in (("bucket", bucket_problem(url_bucket)), ("key", key_problem(url_key))):
            if why:
                raise click.BadParameter(f"{tarball!r} is not s3://BUCKET/KEY: its {what} {why}",
                                         param_hint="TARBALL")
        if bucket not in (None, url_bucket) or key not in (None, url_key):
            raise click.BadParameter(f"{tarball!r} names bucket and key already; --bucket / "
                                     "--key would contradict it", param_hint="TARBALL")
        bucket, key = url_bucket, url_key
    if bucket is None:
        raise click.BadParameter("is needed unless TARBALL is s3://BUCKET/KEY",
                                 param_hint="--bucket")
    if key is None:
        key = f"dcp/{local.name}" if upload is not None else tarball
        if why := key_problem(key):
            raise click.BadParameter(f"{key!r} is not an S3 key: it {why}", param_hint="TARBALL")
    req = CreateRequest(name, bucket, key, logs_bucket or bucket, logs_key, description, upload)
    if dry_run:
        click.echo(req.describe(), nl=False)
        return
    ids = create_afi(req, region)
    if as_json:
        echo_json(ids)
    else:
        click.echo(f"{ids['FpgaImageId']} {ids['FpgaImageGlobalId']}  "
                   f"(next: vta aws wait {ids['FpgaImageId']})")


# ------------------------------------------------------------------- wait
def _minutes(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@aws_cmd.command()
@click.argument("afi", callback=_afi_id("AFI_ID", "an AFI ID (afi- and hex digits)"))
@click.option("--region", default=None, help="AWS region (default: your AWS configuration's)")
@click.option("--interval", type=click.FloatRange(min=1), default=60.0, show_default=True,
              help="seconds between polls")
@click.option("--timeout", type=click.FloatRange(min=0), default=6 * 3600.0, show_default=True,
              help="seconds to wait at most")
@click.option("--dry-run", is_flag=True, help="print the request, send nothing")
@friendly
def wait(afi: str, region: str | None, interval: float, timeout: float, dry_run: bool) -> None:
    """Wait until AFI (afi-...) is available; exit status 1 if it failed.

    Each poll prints the AFI's state and the time waited; Ctrl-C stops waiting (exit
    status 130) and leaves the AFI's creation running.
    """
    from ..aws.afi import wait_afi

    if dry_run:
        click.echo(f"ec2 DescribeFpgaImages {{'FpgaImageIds': [{afi!r}]}} every {interval:g} s "
                   f"until State.Code is available or failed (at most {timeout:g} s)\n", nl=False)
        return
    last = {"code": "", "waited": 0.0}

    def report(code: str, message: str, waited: float) -> None:
        last.update(code=code, waited=waited)
        click.echo(f"{afi}: {code}" + (f" ({message})" if message else "")
                   + f", {_minutes(waited)} waited", err=True)

    try:
        wait_afi(afi, region=region, interval=interval, timeout=timeout, report=report,
                 sleep=time.sleep)
    except KeyboardInterrupt:
        state = f" (last seen {last['code']}, {_minutes(last['waited'])} waited)" \
            if last["code"] else ""
        click.echo(f"\nvta: stopped waiting for {afi}{state}; its creation goes on: "
                   f"`vta aws wait {afi}` waits again", err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    click.echo(f"{afi} is available")


# ------------------------------------------------------------------- load
@aws_cmd.command()
@click.argument("agfi", callback=_afi_id("AGFI_ID", "a global AFI ID (agfi- and hex digits)"))
@click.option("--slot", type=click.IntRange(0, 7), default=0, show_default=True)
@click.option("--force", is_flag=True, help="load even if the slot is busy (after a timeout)")
@click.option("--dry-run", is_flag=True, help="print the commands, run nothing")
@friendly
def load(agfi: str, slot: int, force: bool, dry_run: bool) -> None:
    """Clear the slot, load AGFI (agfi-...) into it and show its status."""
    from ..aws.afi import load_commands, run_commands

    commands = load_commands(agfi, slot, force)
    if dry_run:
        click.echo("".join(" ".join(c) + "\n" for c in commands), nl=False)
        return
    click.echo(run_commands(commands), nl=False)


# ------------------------------------------------------------------- run
@aws_cmd.command("run")
@click.argument("program", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--shell", type=click.Choice(["f1", "f2"]), default="f2", show_default=True)
@click.option("--slot", type=click.IntRange(0, 7), default=0, show_default=True)
@click.option("--sim", is_flag=True,
              help="run on the simulated wrapper (backend f1-sim / f2-sim) instead of the card")
@click.option("--simulator", type=click.Choice(["verilator", "icarus"]), default="verilator",
              show_default=True, help="with --sim: the simulator")
@click.option("--dry-run", is_flag=True, help="print what would run where, touch no device")
@click.option("--json", "as_json", is_flag=True)
@friendly
def run_cmd(program: Path, shell: str, slot: int, sim: bool, simulator: str, dry_run: bool,
            as_json: bool) -> None:
    """Run a program file (.vtaprog) on the card; exit status 3 if an output differs.

    The output regions are compared with the contents recorded in the file.
    """
    from .. import progfile
    from ..device import open_device

    prog = progfile.load(program)
    backend = f"{shell}-sim" if sim else shell
    options = {"simulator": simulator} if sim else {"slot": slot}
    expected = progfile.expectations(prog)
    if dry_run:
        click.echo(f"open {backend} " + (f"slot {slot} " if not sim else "")
                   + f"with configuration {prog.cfg.name} ({prog.cfg.bitstream})\n"
                   + "".join(f"place {r.name}: {r.size} bytes\n" for r in prog.regions)
                   + f"run {prog.insn_count} instructions\n"
                   + f"compare {', '.join(sorted(expected)) or 'no outputs'}\n", nl=False)
        return
    with open_device(backend, prog.cfg, **options) as dev:
        result = progfile.replay(prog, dev)
    mismatches = progfile.compare(expected, result.outputs)
    summary = {"program": str(program), "backend": backend, "slot": None if sim else slot,
               "cycles": result.stats.cycles, "insn_count": prog.insn_count,
               "outputs": {n: len(d) for n, d in result.outputs.items()},
               "mismatches": [vars(m) for m in mismatches]}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(f"{program}: {prog.insn_count} instructions on {backend}"
                   + ("" if sim else f" slot {slot}") + f", {result.stats.cycles:,} cycles; "
                   + ", ".join(f"{n} {len(d)} bytes" for n, d in result.outputs.items()))
    if mismatches:
        raise Differ(f"{len(mismatches)} output region(s) differ from the recorded contents: "
                     + ", ".join(m.region for m in mismatches))
