"""The one rule for a member's cluster login (the name Slurm's `sacctmgr` gets for a user
association), used by the membership service, the API serializers, the model field and the
backends (launcher/backends/contract.py). Plain Python, no Django: the backends import it too.

What `sacctmgr` takes as a user name without reading it as something else: lower-case letters
and digits, then also `_`, `.` and `-` (a leading `-` would be an option, a `,` splits one
name into two, `=` starts a new key), at most 32 characters (the column's length; POSIX
systems allow 32). "0x" is fine; "_x" and "-x" are not.
"""

from __future__ import annotations

import re

CLUSTER_USERNAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,31}$"
CLUSTER_USERNAME_RE = re.compile(CLUSTER_USERNAME_PATTERN)
# The same rule for a form field's `pattern` attribute (anchored by the browser; `-` escaped
# for the `v` flag browsers compile it with).
CLUSTER_USERNAME_HTML_PATTERN = r"[a-z0-9][a-z0-9_.\-]{0,31}"
CLUSTER_USERNAME_HELP = (
    "Use the login name you have on the cluster: 1-32 lower-case letters, "
    "digits, '_', '.' and '-', starting with a letter or a digit."
)


def is_cluster_username(value: object) -> bool:
    """Whether `value` is a login name the backends may pass to the scheduler."""
    return isinstance(value, str) and CLUSTER_USERNAME_RE.match(value) is not None
