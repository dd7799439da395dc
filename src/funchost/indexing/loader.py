"""Import function_app.py as the Python worker does (azure-semantics 2.1).

Import errors are turned into `AppLoadError`s that name the file and line in the app (not in
funchost or a library), so `funchost start` can print something a user can act on.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

import azure.functions as func

from funchost.errors import AppLoadError
from funchost.settings.app_settings import AppSettings

DEFAULT_SCRIPT = "function_app.py"


def script_path(app_dir: Path, settings: AppSettings) -> Path:
    name = settings.get("PYTHON_SCRIPT_FILE_NAME") or DEFAULT_SCRIPT
    return Path(app_dir) / name


def import_app_module(path: Path) -> ModuleType:
    if not path.exists():
        raise AppLoadError(
            f"no {path.name} found in {path.parent}; funchost runs the Python v2 programming model "
            "(function_app.py with azure.functions decorators)",
            file=str(path),
        )
    app_dir = str(path.parent.resolve())
    if app_dir not in sys.path:
        sys.path.insert(0, app_dir)
    module_name = path.stem
    sys.modules.pop(module_name, None)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AppLoadError("cannot be imported as a Python module", file=str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(module_name, None)
        raise AppLoadError(f"SyntaxError: {exc.msg}", file=exc.filename or str(path), line=exc.lineno) from exc
    except BaseException as exc:  # noqa: BLE001 - any import-time failure is the app's
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        file, line = _app_frame(exc, app_dir)
        raise AppLoadError(f"{type(exc).__name__}: {exc}", file=file or str(path), line=line) from exc
    return module


def _app_frame(exc: BaseException, app_dir: str) -> tuple[str | None, int | None]:
    """The innermost traceback frame inside the app folder (outside site-packages)."""
    found: tuple[str | None, int | None] = (None, None)
    for frame in traceback.extract_tb(exc.__traceback__):
        filename = os.path.abspath(frame.filename)
        if filename.startswith(app_dir + os.sep) and "site-packages" not in filename:
            found = (filename, frame.lineno)
    return found


def find_function_register(module: ModuleType, path: Path) -> func.FunctionRegister:
    """Exactly one top-level FunctionApp / AsgiFunctionApp / WsgiFunctionApp, as the worker requires."""
    registers = [(name, value) for name, value in vars(module).items() if isinstance(value, func.FunctionRegister)]
    if not registers:
        raise AppLoadError(
            f"Could not find top level function app instances in {path.name}. "
            "Define one, e.g. app = func.FunctionApp()",
            file=str(path),
        )
    if len(registers) > 1:
        names = ", ".join(name for name, _ in registers)
        raise AppLoadError(
            f"More than one top level function app instances are defined ({names}); define exactly one "
            "and register Blueprints with app.register_functions()",
            file=str(path),
        )
    return registers[0][1]
