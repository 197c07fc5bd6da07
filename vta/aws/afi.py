"""AFI creation and loading: ``vta aws create-afi``, ``wait`` and ``load``.

``create-afi`` uploads the build's tarball to S3 (when given a local file) and calls
EC2 ``CreateFpgaImage``; ``wait`` polls ``DescribeFpgaImages`` until the AFI is
``available`` (or ``failed``); ``load`` runs the instance's FPGA management tools
(``fpga-clear-local-image``, ``fpga-load-local-image``, ``fpga-describe-local-image``).
boto3 comes with the ``aws`` extra (``pip install 'vta[aws]'``).  Each step first
builds its request as data, which ``--dry-run`` prints instead of sending.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import VTAError


class AfiError(VTAError):
    """An AFI request was refused or the AFI failed."""


def _client(service: str, region: str | None):
    try:
        import boto3
    except ImportError:
        raise AfiError("boto3 is not installed: pip install 'vta[aws]'") from None
    return boto3.client(service, region_name=region)


@dataclass
class CreateRequest:
    """What ``create-afi`` uploads and sends."""

    name: str
    bucket: str
    key: str
    logs_bucket: str
    logs_key: str
    description: str = ""
    upload: Path | None = None

    def params(self) -> dict[str, Any]:
        """The ``CreateFpgaImage`` request parameters."""
        out: dict[str, Any] = {
            "Name": self.name,
            "InputStorageLocation": {"Bucket": self.bucket, "Key": self.key},
            "LogsStorageLocation": {"Bucket": self.logs_bucket, "Key": self.logs_key},
        }
        if self.description:
            out["Description"] = self.description
        return out

    def describe(self) -> str:
        lines = []
        if self.upload is not None:
            lines.append(f"upload {self.upload} -> s3://{self.bucket}/{self.key}")
        lines.append(f"ec2 CreateFpgaImage {self.params()}")
        return "\n".join(lines) + "\n"


def create_afi(req: CreateRequest, region: str | None = None, s3=None, ec2=None) -> dict:
    """Upload (if asked) and register the AFI; returns ``{"FpgaImageId", "FpgaImageGlobalId"}``."""
    if req.upload is not None:
        s3 = s3 or _client("s3", region)
        s3.upload_file(str(req.upload), req.bucket, req.key)
    ec2 = ec2 or _client("ec2", region)
    try:
        reply = ec2.create_fpga_image(**req.params())
    except Exception as exc:  # botocore's ClientError and friends
        raise AfiError(f"CreateFpgaImage was refused: {exc}") from None
    return {"FpgaImageId": reply["FpgaImageId"], "FpgaImageGlobalId": reply["FpgaImageGlobalId"]}


def afi_state(afi: str, region: str | None = None, ec2=None) -> tuple[str, str]:
    """(state code, message) of AFI ``afi`` (``pending``, ``available``, ``failed``, ...)."""
    ec2 = ec2 or _client("ec2", region)
    try:
        reply = ec2.describe_fpga_images(FpgaImageIds=[afi])
    except Exception as exc:
        raise AfiError(f"DescribeFpgaImages for {afi} was refused: {exc}") from None
    images = reply.get("FpgaImages", [])
    if not images:
        raise AfiError(f"no AFI {afi} in this region")
    state = images[0].get("State", {})
    return state.get("Code", "unknown"), state.get("Message", "")


def wait_afi(afi: str, *, region: str | None = None, interval: float = 60.0,
             timeout: float = 6 * 3600.0, ec2=None, sleep=time.sleep, report=None) -> str:
    """Poll until ``afi`` is ``available`` (returned) or ``failed`` (:class:`AfiError`)."""
    ec2 = ec2 or _client("ec2", region)
    waited = 0.0
    while True:
        code, message = afi_state(afi, ec2=ec2)
        if report is not None:
            report(code, message, waited)
        if code == "available":
            return code
        if code in ("failed", "unavailable"):
            raise AfiError(f"AFI {afi} is {code}: {message or 'no message'} (the build's logs "
                           "are in the logs bucket given to create-afi)")
        if waited >= timeout:
            raise AfiError(f"AFI {afi} is still {code} after {waited:.0f} s")
        sleep(interval)
        waited += interval


def load_commands(agfi: str, slot: int = 0, force: bool = False) -> list[list[str]]:
    """The FPGA management commands that load ``agfi`` into ``slot`` and show the result."""
    if not agfi.startswith("agfi-"):
        raise AfiError(f"load takes the global AFI ID (agfi-...), not {agfi!r}")
    if not 0 <= slot < 8:
        raise AfiError(f"slot must be in 0..7, not {slot}")
    load = ["sudo", "fpga-load-local-image", "-S", str(slot), "-I", agfi]
    return [["sudo", "fpga-clear-local-image", "-S", str(slot)],
            load + (["-F"] if force else []),
            ["sudo", "fpga-describe-local-image", "-S", str(slot), "-R", "-H"]]


def run_commands(commands: list[list[str]]) -> str:
    """Run each command in turn (stop at the first failure); returns the last one's output."""
    out = ""
    for cmd in commands:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise AfiError(f"{cmd[0]} not found: the FPGA management tools come with the AWS "
                           "SDK (source aws-fpga/sdk_setup.sh on an F1/F2 instance)") from None
        if done.returncode != 0:
            raise AfiError(f"`{' '.join(cmd)}` failed (exit {done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()}")
        out = done.stdout
    return out
