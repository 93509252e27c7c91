"""``--remote URI`` and ``--key-file ID=PEM``: the remote tier (KIP-405) a command reads beside a log
dir, declared once for every command that takes it, and opened with one-line errors."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from cli import heavy
from cli.common import fail
from cli.declare import Option

if TYPE_CHECKING:
    from kafkaforensics.log.remote import RemoteTier

REMOTE = Option(None, "--remote", metavar="URI",
                help="The partitions' remote tier (tiered storage): a dir, file://... or s3://bucket/prefix holding "
                     "Aiven's tiered-storage plugin layout or raw topic/partition copies; each partition is read "
                     "as Kafka's UnifiedLog reads it (remote segments below the local log start, then the local ones)")
KEY_FILE = Option([], "--key-file", metavar="ID=PEM",
                  help="The RSA private key (PEM) that unwraps the data keys of an encrypted remote tier, by its key "
                       "id (repeatable)")


def key_files(specs: List[str]) -> dict[str, str]:
    """``ID=PEM`` arguments as {key id: PEM path}; a malformed one is a one-line usage error."""
    out = {}
    for spec in specs or []:
        key_id, sep, path = spec.partition("=")
        if not sep or not key_id or not path:
            fail(f"--key-file {spec!r}: expected ID=PEM (the key id the tier's manifests name, then the PEM file)")
        out[key_id] = path
    return out


def open_remote(uri: Optional[str], specs: List[str]) -> RemoteTier | None:
    """The tier ``--remote`` names (None without one); a wrong URI or key file is one line, exit 2."""
    if uri is None:
        if specs:
            fail("--key-file needs --remote URI")
        return None
    try:
        return heavy.remote_tier.RemoteTier.open(uri, key_files(specs))
    except heavy.remote_tier.RemoteTierError as e:
        fail(e.problem.detail)
