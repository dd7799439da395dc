"""A `Runtime` for tests that drive one trigger or binding directly, without a `Host`.

The storage is the host's (`open_storage`: Azure's rules, fault points and wake-ups in front
of the backend) on the runtime's own signals and faults, as `Host.load` builds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from funchost.clock import Clock
from funchost.invocation.contracts import FunctionInvoker
from funchost.runtime.contracts import Runtime
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.host_json import HostOptions
from funchost.storage.host_storage import open_storage


def make_test_runtime(app_dir: Path, data_dir: Path, clock: Clock, invoker: FunctionInvoker | None, *,
                      settings: AppSettings | None = None, options: HostOptions | None = None,
                      storage: str = "embedded", **fields: Any) -> Runtime:
    settings = settings or AppSettings({}, environ={})
    signals, faults = Signals(), FaultInjector()
    return Runtime(app_dir=app_dir, data_dir=data_dir, clock=clock, settings=settings, options=options or HostOptions(),
                   storage=open_storage(storage, data_dir, settings, clock, faults=faults, signals=signals),
                   invoker=invoker, signals=signals, faults=faults, **fields)  # type: ignore[arg-type]
