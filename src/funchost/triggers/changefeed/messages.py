"""What the Cosmos DB trigger says when a container it needs does not exist.

Azure's message first (users search for it), then what only a local host can add: the embedded
store it looked in and the `funchost docs create` command that creates the container.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from funchost.documents import DEFAULT_CONNECTION

if TYPE_CHECKING:
    from funchost.runtime.contracts import Runtime
    from funchost.storage.documents import DocumentStore
    from funchost.triggers.changefeed.options import TriggerOptions

LEASE_PARTITION_KEY = "/id"


def missing_container_message(o: TriggerOptions, missing: str | None = None) -> str:
    """Azure's message, with its CreateLeaseContainerIfNotExists advice only when that is not set;
    then `missing` (see `missing_in_store`)."""
    text = (f"Either the source container '{o.container}' (in database '{o.database}')  or the lease container "
            f"'{o.lease_container}' (in database '{o.lease_database}') does not exist. Both containers must exist "
            "before the listener starts.")
    if not o.create_lease_container:
        text += " To automatically create the lease container, set 'CreateLeaseContainerIfNotExists' to 'true'."
    return f"{text} {missing}" if missing else text


def missing_in_store(store: DocumentStore, database: str, container: str, runtime: Runtime,
                     *, lease: bool = False) -> str:
    """Where funchost looked for `container` and the command that creates it there."""
    command = ["funchost", "docs", "create"]
    if runtime.data_dir == runtime.app_dir / ".funchost":
        command += ["--app", str(runtime.app_dir)]
    else:
        command += ["--data", str(runtime.data_dir)]
    if store.name != DEFAULT_CONNECTION:
        command += ["--connection", store.name]
    command += ["-d", database, "-c", container, "--partition-key-path", LEASE_PARTITION_KEY]
    hint = "" if lease else " (set --partition-key-path to the container's partition key)"
    return (f"funchost looked for container '{container}' in database '{database}' of the embedded document "
            f"store '{store.name}' ({runtime.data_dir / 'storage' / store.name}). Create it with: {shlex.join(command)}{hint}")
