"""AFI creation and loading: ``vta aws create-afi``, ``wait`` and ``load``.

``create-afi`` uploads the build's tarball to S3 (when given a local file) and calls
EC2 ``CreateFpgaImage``; ``wait`` polls ``DescribeFpgaImages`` until the AFI is
``available`` (or ``failed``); ``load`` runs the instance's FPGA management tools
(``fpga-clear-local-image``, ``fpga-load-local-image``, ``fpga-describe-local-image``).
boto3 comes with the ``aws`` extra (``pip install 'vta[aws]'``).  Each step first
builds its request as data, which ``--dry-run`` prints instead of sending.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import VTAError


class AfiError(VTAError):
    """An AFI request was refused or the AFI failed.

    ``kind`` says what went wrong where a caller can act on it (``"throttled"``: AWS
    asked for fewer requests).
    """

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind = kind


# ------------------------------------------------------------------ names and IDs
#: An AFI ID (regional) and an AGFI ID (global): the prefix and lowercase hex digits.
AFI_ID = re.compile(r"afi-[0-9a-f]{8,32}")
AGFI_ID = re.compile(r"agfi-[0-9a-f]{8,32}")


def bucket_problem(name: str) -> str | None:
    """Why ``name`` is not an S3 bucket name (AWS's naming rules), or None."""
    if not name:
        return "is empty"
    if not 3 <= len(name) <= 63:
        return f"has {len(name)} characters (3 to 63)"
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", name):
        return ("may hold only lowercase letters, digits, dots and hyphens, and begins and "
                "ends with a letter or digit")
    if ".." in name:
        return "has two dots in a row"
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name):
        return "is an IP address"
    if name.startswith(("xn--", "sthree-")) or name.endswith(("-s3alias", "--ol-s3")):
        return "uses a prefix or suffix S3 reserves"
    return None


def key_problem(key: str) -> str | None:
    """Why ``key`` is not an S3 object key (1 to 1,024 bytes of UTF-8, no control
    characters), or None."""
    if not key:
        return "is empty"
    if len(key.encode()) > 1024:
        return f"has {len(key.encode())} bytes (at most 1,024)"
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        return "holds a control character"
    return None


def split_s3_url(url: str) -> tuple[str, str]:
    """(bucket, key) of ``s3://bucket/key``."""
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


# ------------------------------------------------------------------ AWS errors, one line
_DENIED = {"AccessDenied", "UnauthorizedOperation", "AccessDeniedException", "Forbidden",
           "AllAccessDisabled"}
_BAD_CREDENTIALS = {"AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch",
                    "ExpiredToken", "ExpiredTokenException", "InvalidAccessKeyId",
                    "UnrecognizedClientException", "RequestExpired"}
_THROTTLED = {"Throttling", "ThrottlingException", "RequestLimitExceeded", "SlowDown",
              "RequestThrottled", "RequestThrottledException", "TooManyRequestsException"}
_OTHER_REGION = {"PermanentRedirect", "AuthorizationHeaderMalformed",
                 "IllegalLocationConstraintException", "301"}
#: What to do about each error code of a failed AFI (aws-fpga hdk/docs/
#: create_fpga_image_error_codes.md).
AFI_FAILURES = {
    "INACCESSIBLE_INPUT": "AWS could not read the tarball: check that the bucket is in the "
                          "region the AFI was created in (--region) and that its policy "
                          "lets EC2 read it, then run create-afi again",
    "INPUT_SIZE_ILLEGAL": "the tarball's size is not accepted: upload the build's "
                          "*.Developer_CL.tar unchanged",
    "DCP_INTEGRITY_UNVERIFIED": "the DCP does not match the manifest's hash: upload the "
                                "build's tarball unchanged",
    "MANIFEST_NOT_FOUND": "the tarball has no manifest: upload the *.Developer_CL.tar the "
                          "HDK build wrote",
    "MANIFEST_PARSE_FAILED": "the manifest could not be parsed: rebuild with vta aws build",
    "SHELL_VERSION_INVALID": "the shell version is not accepted: rebuild with the HDK "
                             "checkout's current shell",
    "SHELL_VERSION_DEPRECATED": "the shell is deprecated: update the aws-fpga checkout and "
                                "rebuild",
    "PCIID_SYNTAX_INVALID": "the manifest's PCI IDs are malformed: rebuild with vta aws build "
                            "(it writes design/cl_id_defines.vh)",
    "PCIID_FORBIDDEN": "a PCI ID is reserved: rebuild with vta aws build",
    "CLK_ILLEGAL": "the clock recipes are not accepted: rebuild with a supported "
                   "--clock-recipe",
    "CORRUPT_ARCHIVE": "the tarball is corrupt: upload it again",
    "DCP_NOT_FOUND": "the tarball holds no DCP of the manifest's name: upload the build's "
                     "tarball unchanged",
    "DCP_CORRUPT": "the DCP is corrupt: rebuild and upload again",
    "DCP_NOT_ENCRYPTED": "the DCP is not encrypted: build with the HDK's scripts "
                         "(vta aws build runs them)",
}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _client_error(exc: BaseException):
    """The botocore ClientError behind ``exc`` (boto3 wraps upload errors), or None."""
    from botocore.exceptions import ClientError

    while exc is not None:
        if isinstance(exc, ClientError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def cloud_error(exc: BaseException, what: str, *, need: str = "",
                bucket: str | None = None) -> AfiError:
    """One line for an error of an AWS request: what failed, why, and what to do.

    ``what``: the request ("CreateFpgaImage for s3://b/k"); ``need``: the IAM
    permission it takes; ``bucket``: the S3 bucket involved (its region is named when
    AWS says it lies in another).
    """
    from botocore import exceptions as bexc

    if isinstance(exc, bexc.NoRegionError):
        return AfiError(f"{what}: no AWS region is configured; pass --region REGION, set "
                        "AWS_REGION, or run `aws configure`")
    if isinstance(exc, bexc.NoCredentialsError | bexc.PartialCredentialsError):
        return AfiError(f"{what}: no AWS credentials were found; run `aws configure`, set "
                        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give the instance "
                        "an IAM role")
    if isinstance(exc, bexc.EndpointConnectionError | bexc.ConnectTimeoutError):
        return AfiError(f"{what}: cannot reach AWS ({_one_line(exc)}); check the network and "
                        "the region name")
    err = _client_error(exc)
    if err is None:
        return AfiError(f"{what} failed: {_one_line(exc)}")
    info = err.response.get("Error", {})
    code, message = str(info.get("Code", "")), _one_line(info.get("Message", ""))
    said = f"({code}: {message})" if message else f"({code})"
    if code in _DENIED:
        return AfiError(f"{what} was denied {said}; the AWS identity needs "
                        f"{need or 'the permission for it'}")
    if code in _BAD_CREDENTIALS:
        return AfiError(f"{what}: the AWS credentials were refused {said}; renew them or run "
                        "`aws configure` (`aws sts get-caller-identity` shows whose they are)")
    if code in _THROTTLED:
        return AfiError(f"{what}: AWS is throttling requests {said}; wait a minute and run "
                        "the command again", kind="throttled")
    if code in _OTHER_REGION:
        headers = err.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        found = (info.get("Region") or headers.get("x-amz-bucket-region")
                 or next(iter(re.findall(r"expecting '([a-z0-9-]+)'", message)), None))
        where = f" ({found})" if found else ""
        return AfiError(f"{what}: bucket {bucket or ''} is in another region{where}; pass "
                        f"--region {found or 'REGION'} (the bucket's region, where the AFI "
                        "is created)")
    if code in ("NoSuchBucket", "404") and bucket:
        return AfiError(f"{what}: bucket {bucket} does not exist; create it (`aws s3 mb "
                        f"s3://{bucket}`) or name another with --bucket")
    return AfiError(f"{what} failed {said}")


def _session(region: str | None):
    """A boto3 session with a region (an :class:`AfiError` when none is configured)."""
    try:
        import boto3
    except ImportError:
        raise AfiError("boto3 is not installed: pip install 'vta[aws]'") from None
    session = boto3.session.Session(region_name=region)
    if session.region_name is None:
        raise AfiError("no AWS region is configured: pass --region REGION, set AWS_REGION, "
                       "or run `aws configure`")
    return session


def _client(service: str, region: str | None):
    return _session(region).client(service)


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
        where = f"uploading {req.upload} to s3://{req.bucket}/{req.key}"
        try:
            s3 = s3 or _client("s3", region)
            s3.upload_file(str(req.upload), req.bucket, req.key)
        except AfiError:
            raise
        except Exception as exc:  # botocore's errors, and boto3's wrapper of them
            raise cloud_error(exc, where, need=f"s3:PutObject on {req.bucket}",
                              bucket=req.bucket) from None
    try:
        ec2 = ec2 or _client("ec2", region)
        reply = ec2.create_fpga_image(**req.params())
    except AfiError:
        raise
    except Exception as exc:
        raise cloud_error(exc, f"CreateFpgaImage for s3://{req.bucket}/{req.key}",
                          need="ec2:CreateFpgaImage (and s3:GetObject, s3:PutObject on the "
                               "buckets)", bucket=req.bucket) from None
    return {"FpgaImageId": reply["FpgaImageId"], "FpgaImageGlobalId": reply["FpgaImageGlobalId"]}


def afi_state(afi: str, region: str | None = None, ec2=None) -> tuple[str, str]:
    """(state code, message) of AFI ``afi`` (``pending``, ``available``, ``failed``, ...)."""
    try:
        ec2 = ec2 or _client("ec2", region)
        reply = ec2.describe_fpga_images(FpgaImageIds=[afi])
    except AfiError:
        raise
    except Exception as exc:
        raise cloud_error(exc, f"DescribeFpgaImages for {afi}",
                          need="ec2:DescribeFpgaImages") from None
    images = reply.get("FpgaImages", [])
    if not images:
        raise AfiError(f"no AFI {afi} in this region; pass --region with the region "
                       "create-afi used")
    state = images[0].get("State", {})
    return state.get("Code", "unknown"), state.get("Message", "")


def failure_text(afi: str, code: str, message: str) -> str:
    """One line for an AFI in state ``failed`` / ``unavailable``: AWS's message and what
    to do about its error code."""
    message = _one_line(message) or "no message"
    todo = next((hint for key, hint in AFI_FAILURES.items() if key in message),
                "the logs bucket given to create-afi holds the build's logs")
    return f"AFI {afi} is {code}: {message}; {todo}"


def wait_afi(afi: str, *, region: str | None = None, interval: float = 60.0,
             timeout: float = 6 * 3600.0, ec2=None, sleep=time.sleep, report=None,
             clock=time.monotonic) -> str:
    """Poll until ``afi`` is ``available`` (returned) or ``failed`` (:class:`AfiError`).

    ``report(code, message, waited)`` is called after each poll.  When AWS throttles a
    poll, the next one comes after twice the interval (at most ten minutes), and so on.
    """
    ec2 = ec2 or _client("ec2", region)
    start = clock()
    delay = interval
    while True:
        try:
            code, message = afi_state(afi, ec2=ec2)
            delay = interval
        except AfiError as exc:
            if exc.kind != "throttled":
                raise
            code, message = "throttled", f"next poll in {min(2 * delay, 600.0):.0f} s"
            delay = min(2 * delay, 600.0)
        waited = clock() - start
        if report is not None:
            report(code, message, waited)
        if code == "available":
            return code
        if code in ("failed", "unavailable"):
            raise AfiError(failure_text(afi, code, message))
        if waited >= timeout:
            raise AfiError(f"AFI {afi} is still {code} after {waited:.0f} s; `vta aws wait "
                           f"{afi}` waits again (AFIs take up to a few hours)")
        sleep(delay)


def load_commands(agfi: str, slot: int = 0, force: bool = False) -> list[list[str]]:
    """The FPGA management commands that load ``agfi`` into ``slot`` and show the result."""
    if not AGFI_ID.fullmatch(agfi):
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
