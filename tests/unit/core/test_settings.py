from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_ACCOUNT, resolve_storage_connection
from funchost.settings.exported import export, exported_settings
from funchost.settings.host_json import DEFAULT_FUNCTION_TIMEOUT, load_host_json, parse_host_json
from funchost.settings.local_settings import load_local_settings
from funchost.settings.timespan import parse_timespan


def test_environment_wins_over_local_settings_and_lookup_is_case_insensitive() -> None:
    settings = AppSettings({"A": "file", "B": "file"}, environ={"a": "env"})
    assert settings.get("A") == "env"
    assert settings.get("b") == "file"


def test_tokens_resolve_and_missing_ones_are_errors() -> None:
    settings = AppSettings({"QUEUE": "orders"}, environ={})
    assert settings.resolve_tokens("%QUEUE%-poison") == "orders-poison"
    with pytest.raises(ConfigError, match="'MISSING'"):
        settings.resolve_tokens("%MISSING%")


def test_local_settings_parsing_and_errors(tmp_path: Path) -> None:
    (tmp_path / "local.settings.json").write_text(json.dumps(
        {"IsEncrypted": False, "Values": {"X": "1", "N": 5, "B": True}, "Host": {"LocalHttpPort": 7072}}))
    local = load_local_settings(tmp_path)
    assert local.values == {"X": "1", "N": "5", "B": "true"}
    assert local.local_http_port == 7072
    (tmp_path / "local.settings.json").write_text(json.dumps({"Values": {}, "Hots": {}}))
    with pytest.raises(ConfigError, match="local.settings.json: Hots"):
        load_local_settings(tmp_path)
    (tmp_path / "local.settings.json").write_text('{"Values": {')
    with pytest.raises(ConfigError, match="invalid JSON at line 1"):
        load_local_settings(tmp_path)


def test_host_json_requires_version_and_names_typos() -> None:
    with pytest.raises(ConfigError, match="version"):
        parse_host_json({})
    typo = parse_host_json({"version": "2.0", "functionTimout": "00:01:00"})
    assert typo.function_timeout == DEFAULT_FUNCTION_TIMEOUT  # ignored, as the Functions host does
    assert "host.json: functionTimout: unknown key ignored, as the Functions host ignores keys it does not bind " \
           "(did you mean 'functionTimeout'?)" in typo.warnings
    with pytest.raises(ConfigError, match="host.json: logging.logLevel.default"):
        parse_host_json({"version": "2.0", "logging": {"logLevel": {"default": "Loud"}}})


def test_host_json_timeout_and_known_keys_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    options = parse_host_json({"version": "2.0", "functionTimeout": "00:00:10",
                               "healthMonitor": {"enabled": True},
                               "logging": {"console": {"isEnabled": True}}})
    assert options.function_timeout == 10.0
    assert len(options.warnings) == 2
    assert any("healthMonitor" in w for w in options.warnings)
    assert any("logging.console" in w for w in options.warnings)
    assert parse_host_json({"version": "2.0", "functionTimeout": "-1"}).function_timeout is None
    # infinite is any TimeSpan equal to -1 day, as the host compares it; a JSON number too
    for infinite in (-1, "-1:00:00:00", "-1.0:0:0"):
        assert parse_host_json({"version": "2.0", "functionTimeout": infinite}).function_timeout is None
    with pytest.raises(ConfigError, match="at least 1"):
        parse_host_json({"version": "2.0", "functionTimeout": "00:00:00"})


STOCK_TEMPLATE = {  # host.json of `func init --worker-runtime python`, in most real apps
    "version": "2.0",
    "logging": {"applicationInsights": {"samplingSettings": {"isEnabled": True, "excludedTypes": "Request"}}},
    "extensionBundle": {"id": "Microsoft.Azure.Functions.ExtensionBundle", "version": "[4.*, 5.0.0)"},
}


def test_the_stock_template_and_a_host_written_file_start_without_warnings(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="funchost.config"):
        assert parse_host_json(STOCK_TEMPLATE).warnings == ()
        assert parse_host_json({"version": "2.0", "isDefaultHostConfig": True}).warnings == ()
    assert [r.levelno for r in caplog.records] == [logging.DEBUG] * 3


def test_keys_the_functions_host_ignores_get_one_warning_and_typos_stay_errors() -> None:
    options = parse_host_json({"version": "2.0", "myTeamNote": "x", "owner": {"name": "ops"},
                               "extensions": {"openAI": {}, "queues": {"batchSize": 4}}})
    assert options.warnings == (
        "host.json: 'extensions.openAI' is not an extension funchost knows; ignored",
        "host.json: unknown top-level key(s) 'myTeamNote', 'owner' ignored, as the Functions host ignores them",
    )
    for raw, warning in [
        ({"extensionBundel": {}}, "host.json: extensionBundel: unknown key ignored"),
        ({"extensions": {"queue": {}}}, "host.json: extensions.queue: unknown key ignored"),
        ({"extensions": {"queues": {"batchSzie": 4}}}, "host.json: extensions.queues.batchSzie: unknown key ignored"),
    ]:
        warnings = parse_host_json({"version": "2.0", **raw}).warnings
        assert any(w.startswith(warning) and "(did you mean '" in w for w in warnings), warnings


def test_missing_host_json_means_defaults(tmp_path: Path) -> None:
    assert load_host_json(tmp_path).function_timeout == 1800.0


@pytest.mark.parametrize(("text", "seconds"), [
    ("00:00:02", 2), ("00:01", 60), ("1.02:00:00", 93600), ("5", 432000), ("00:00:00.5", 0.5),
    ("25:00:00:00", 25 * 86400), ("-00:00:01", -1),
])
def test_timespans(text: str, seconds: float) -> None:
    assert parse_timespan(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "24:00:00", "00:60:00", "1:2:3:4:5"])
def test_bad_timespans(text: str) -> None:
    with pytest.raises(ValueError):
        parse_timespan(text)


def test_connection_resolution_order() -> None:
    settings = AppSettings({
        "AzureWebJobsStorage": "UseDevelopmentStorage=true",
        "AzureWebJobsOther": "DefaultEndpointsProtocol=https;AccountName=other;AccountKey=a2V5",
        "Exact": "AccountName=exact;AccountKey=a2V5",
        "Ident__queueServiceUri": "https://ident.queue.core.windows.net",
    }, environ={})
    assert resolve_storage_connection(None, settings).account_name == DEVSTORE_ACCOUNT
    assert resolve_storage_connection("", settings).setting_name == "AzureWebJobsStorage"
    assert resolve_storage_connection("Other", settings).account_name == "other"
    assert resolve_storage_connection("Exact", settings).account_name == "exact"
    ident = resolve_storage_connection("Ident", settings, service="queue")
    assert ident.is_identity and ident.account_name == "ident"
    assert "a2V5" not in repr(resolve_storage_connection("Exact", settings))
    with pytest.raises(ConfigError, match="'Nope' does not exist"):
        resolve_storage_connection("Nope", settings)


def test_app_settings_override_host_json_keys(tmp_path: Path) -> None:
    (tmp_path / "host.json").write_text(json.dumps(
        {"version": "2.0", "functionTimeout": "00:10:00", "extensions": {"queues": {"batchSize": 4}}}))
    settings = AppSettings({}, environ={
        "AzureFunctionsJobHost__functionTimeout": "00:00:30",
        "azurefunctionsjobhost__Extensions__Queues__visibilityTimeout": "00:00:02",
        "AzureFunctionsJobHost__logging__logLevel__default": "Warning",
    })
    options = load_host_json(tmp_path, settings)
    assert options.function_timeout == 30
    queues = options.extension("queues")
    assert queues.batch_size == 4 and queues.visibility_timeout == 2
    assert options.log_levels == {"default": "Warning"}
    typo = load_host_json(tmp_path, AppSettings({}, environ={"AzureFunctionsJobHost__extensions__queues__batchSzie": "3"}))
    assert any("extensions.queues.batchSzie: unknown key ignored" in w for w in typo.warnings)


def test_connection_strings_are_looked_up_first_and_the_prefixed_name_wins() -> None:
    # WebJobs' GetWebJobsConnectionSection: AzureWebJobs<Name> before <Name>, each first in ConnectionStrings.
    settings = AppSettings({
        "ConnectionStrings:Orders": "AccountName=fromsection;AccountKey=a2V5",
        "Orders": "AccountName=fromroot;AccountKey=a2V5",
        "AzureWebJobsBoth": "AccountName=prefixed;AccountKey=a2V5",
        "Both": "AccountName=exact;AccountKey=a2V5",
    }, environ={"ConnectionStrings__Env": "AccountName=fromenv;AccountKey=a2V5"})
    orders = resolve_storage_connection("Orders", settings)
    assert (orders.setting_name, orders.account_name) == ("ConnectionStrings:Orders", "fromsection")
    assert resolve_storage_connection("Both", settings).account_name == "prefixed"
    assert resolve_storage_connection("Env", settings).account_name == "fromenv"


def test_local_connection_strings_are_exported_as_core_tools_does(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "local.settings.json").write_text(json.dumps({
        "Values": {"AZURE_FUNCTIONS_ENVIRONMENT": "Production", "X": "1"},
        "ConnectionStrings": {"Sql": "Server=db", "Obj": {"ConnectionString": "Server=obj", "ProviderName": "p"}},
    }))
    local = load_local_settings(tmp_path)
    with caplog.at_level(logging.WARNING, logger="funchost.config"):
        values = exported_settings(local, 7072, warn=True)
    assert values == {"X": "1", "ConnectionStrings:Sql": "Server=db", "ConnectionStrings:Obj": "Server=obj",
                      "WEBSITE_HOSTNAME": "localhost:7072", "AZURE_FUNCTIONS_ENVIRONMENT": "Development"}
    assert "AZURE_FUNCTIONS_ENVIRONMENT already exists with value 'Production', overriding to 'Development'." \
        in caplog.messages
    assert "WEBSITE_HOSTNAME" not in exported_settings(local, 0)  # a port picked at bind: set later
    environ = {"X": "real"}
    export(values, environ)
    assert environ["X"] == "real" and environ["ConnectionStrings:Sql"] == "Server=db"
    (tmp_path / "local.settings.json").write_text(json.dumps({"ConnectionStrings": {"Bad": 5}}))
    with pytest.raises(ConfigError, match="ConnectionStrings.Bad"):
        load_local_settings(tmp_path)


def test_the_host_exports_connection_strings_hostname_and_environment(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from funchost.host import Host, HostConfig
    from funchost.testing import write_app

    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items()
                                        if k not in ("WEBSITE_HOSTNAME", "AZURE_FUNCTIONS_ENVIRONMENT")})
    write_app(tmp_path / "app", """
        import os
        import azure.functions as func
        app = func.FunctionApp()
        SEEN = {k: os.environ.get(k) for k in ("ConnectionStrings:Jobs", "WEBSITE_HOSTNAME",
                                                "AZURE_FUNCTIONS_ENVIRONMENT")}

        @app.queue_trigger(arg_name="m", queue_name="jobs", connection="Jobs")
        def f(m: func.QueueMessage) -> None:
            pass
    """)
    local = json.loads((tmp_path / "app" / "local.settings.json").read_text())
    local["ConnectionStrings"] = {"Jobs": "UseDevelopmentStorage=true"}
    (tmp_path / "app" / "local.settings.json").write_text(json.dumps(local))
    host = Host(HostConfig(app_dir=tmp_path / "app", data_dir=tmp_path / "data", port=7099))
    runtime = host.load()
    import function_app

    assert function_app.SEEN == {"ConnectionStrings:Jobs": "UseDevelopmentStorage=true",
                                 "WEBSITE_HOSTNAME": "localhost:7099", "AZURE_FUNCTIONS_ENVIRONMENT": "Development"}
    assert runtime.storage.connection("Jobs").setting_name == "ConnectionStrings:Jobs"
