"""Indexing as the Python worker does it, and errors that name file, line and function."""

from __future__ import annotations

from pathlib import Path

import pytest

from funchost.errors import AppLoadError, ConfigError
from funchost.indexing.indexer import index_app
from funchost.settings.app_settings import AppSettings
from funchost.testing import write_app


def index(folder: Path, code: str, **settings: str):
    write_app(folder, code)
    return index_app(folder, AppSettings({}, environ=settings))


def test_indexes_functions_with_bindings_and_names(tmp_path: Path) -> None:
    functions = index(tmp_path, """
        import azure.functions as func
        app = func.FunctionApp()

        @app.function_name("Greeter")
        @app.route(route="hello/{name}", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
        def hello(req: func.HttpRequest) -> func.HttpResponse:
            return func.HttpResponse("hi")

        @app.queue_trigger(arg_name="msg", queue_name="%QUEUE%", connection="AzureWebJobsStorage")
        def work(msg: func.QueueMessage) -> None:
            pass
    """, QUEUE="Orders")
    by_name = {f.name: f for f in functions}
    assert set(by_name) == {"Greeter", "work"}
    greeter = by_name["Greeter"]
    assert greeter.trigger.type == "httpTrigger"
    assert greeter.trigger.get("route") == "hello/{name}"
    assert greeter.trigger.get("authlevel") == "ANONYMOUS"
    assert greeter.return_binding is not None and greeter.return_binding.type == "http"
    assert by_name["work"].trigger.get("queueName") == "Orders"  # %Setting% resolved
    assert by_name["work"].source_line is not None


def test_blueprints_are_indexed(tmp_path: Path) -> None:
    write_app(tmp_path, """
        import azure.functions as func
        from routes import bp
        app = func.FunctionApp()
        app.register_functions(bp)
    """, files={"routes.py": """
        import azure.functions as func
        bp = func.Blueprint()

        @bp.route(route="bp")
        def from_blueprint(req: func.HttpRequest) -> func.HttpResponse:
            return func.HttpResponse("bp")
    """})
    functions = index_app(tmp_path, AppSettings({}, environ={}))
    assert [f.name for f in functions] == ["from_blueprint"]


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError) as caught:
        index(tmp_path, "import azure.functions as func\napp = func.FunctionApp(\n\ndef broken(:\n")
    assert caught.value.file is not None and caught.value.file.endswith("function_app.py")
    assert caught.value.line is not None and caught.value.line >= 2
    assert "SyntaxError" in str(caught.value)


def test_import_error_names_the_line_in_the_app(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError) as caught:
        index(tmp_path, "import azure.functions as func\nimport not_a_module_anywhere\napp = func.FunctionApp()\n")
    assert caught.value.line == 2
    assert "ModuleNotFoundError" in str(caught.value) and "not_a_module_anywhere" in str(caught.value)


def test_missing_function_app_py(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError, match="function_app.py"):
        index_app(tmp_path, AppSettings({}, environ={}))


def test_no_app_instance_and_two_app_instances(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError, match="Could not find top level function app instances"):
        index(tmp_path / "a", "import azure.functions as func\n")
    with pytest.raises(AppLoadError, match=r"More than one top level function app instances.*\(a, b\)"):
        index(tmp_path / "b", "import azure.functions as func\na = func.FunctionApp()\nb = func.FunctionApp()\n")


def test_function_without_trigger_names_function_and_line(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError) as caught:
        index(tmp_path, """
            import azure.functions as func
            app = func.FunctionApp()

            @app.queue_output(arg_name="out", queue_name="q", connection="AzureWebJobsStorage")
            def lonely(out: func.Out[str]) -> None:
                pass
        """)
    assert caught.value.function == "lonely"
    assert caught.value.line == 5
    assert "does not have a trigger" in str(caught.value)


def test_an_unsupported_trigger_is_indexed_for_the_host_to_report(tmp_path: Path) -> None:
    """The worker indexes any binding type; the host puts the function in error (test_isolation)."""
    [fn] = index(tmp_path, """
        import azure.functions as func
        app = func.FunctionApp()

        @app.sql_trigger(arg_name="msg", table_name="dbo.t", connection_string_setting="SQL")
        def bus(msg: str) -> None:
            pass
    """)
    assert (fn.name, fn.trigger_type, fn.errors) == ("bus", "sqlTrigger", ())


def test_parameter_binding_mismatches_use_the_workers_wording(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError, match="declared in Python but not in function.json") as caught:
        index(tmp_path / "a", """
            import azure.functions as func
            app = func.FunctionApp()

            @app.route(route="x")
            def extra(req: func.HttpRequest, surprise: str) -> func.HttpResponse:
                return func.HttpResponse("x")
        """)
    assert caught.value.function == "extra"
    with pytest.raises(AppLoadError, match="declared in function.json but not in Python"):
        index(tmp_path / "b", """
            import azure.functions as func
            app = func.FunctionApp()

            @app.route(route="x")
            def missing() -> func.HttpResponse:
                return func.HttpResponse("x")
        """)


def test_context_annotation_and_out_rules(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError, match='"context" parameter is expected to be of type'):
        index(tmp_path / "a", """
            import azure.functions as func
            app = func.FunctionApp()

            @app.route(route="x")
            def f(req: func.HttpRequest, context: str) -> func.HttpResponse:
                return func.HttpResponse("x")
        """)
    with pytest.raises(AppLoadError, match='"out" direction, but its annotation'):
        index(tmp_path / "b", """
            import azure.functions as func
            app = func.FunctionApp()

            @app.route(route="x")
            @app.queue_output(arg_name="out", queue_name="q", connection="AzureWebJobsStorage")
            def f(req: func.HttpRequest, out: str) -> func.HttpResponse:
                return func.HttpResponse("x")
        """)
    with pytest.raises(AppLoadError, match='does not match its Python annotation'):
        index(tmp_path / "c", """
            import azure.functions as func
            app = func.FunctionApp()

            @app.queue_trigger(arg_name="msg", queue_name="q", connection="AzureWebJobsStorage")
            def f(msg: func.HttpRequest) -> None:
                pass
        """)


def test_retry_policy_is_parsed_and_validated(tmp_path: Path) -> None:
    [fn] = index(tmp_path / "a", """
        import azure.functions as func
        app = func.FunctionApp()

        @app.timer_trigger(arg_name="t", schedule="*/5 * * * * *")
        @app.retry(strategy="exponential_backoff", max_retry_count="3",
                   minimum_interval="00:00:04", maximum_interval="00:15:00")
        def tick(t: func.TimerRequest) -> None:
            pass
    """)
    assert fn.retry is not None
    assert (fn.retry.strategy, fn.retry.max_retry_count) == ("exponential_backoff", 3)
    assert (fn.retry.minimum_interval, fn.retry.maximum_interval) == (4.0, 900.0)
    [broken] = index(tmp_path / "b", """
            import azure.functions as func
            app = func.FunctionApp()

            @app.timer_trigger(arg_name="t", schedule="*/5 * * * * *")
            @app.retry(strategy="exponential_backoff", max_retry_count="3",
                       minimum_interval="00:10:00", maximum_interval="00:00:01")
            def tick(t: func.TimerRequest) -> None:
                pass
        """)
    assert broken.name == "tick" and len(broken.errors) == 1  # the host lists it in error
    assert broken.errors[0].startswith("invalid retry policy: ")


def test_a_missing_setting_token_puts_only_that_function_in_error(tmp_path: Path) -> None:
    [fn] = index(tmp_path, """
        import azure.functions as func
        app = func.FunctionApp()

        @app.queue_trigger(arg_name="msg", queue_name="%NOT_SET%", connection="AzureWebJobsStorage")
        def f(msg: func.QueueMessage) -> None:
            pass
    """)
    assert fn.errors == ("function 'f' binding 'msg' queueName: app setting 'NOT_SET' referenced as %NOT_SET% "
                         "is not defined",)
    assert fn.trigger.get("queueName") == "%NOT_SET%"  # left as written


def test_duplicate_function_names_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(AppLoadError, match="unique function name"):
        index(tmp_path, """
            import azure.functions as func
            app = func.FunctionApp()

            @app.function_name("same")
            @app.route(route="a")
            def a(req: func.HttpRequest) -> func.HttpResponse:
                return func.HttpResponse("a")

            @app.function_name("same")
            @app.route(route="b")
            def b(req: func.HttpRequest) -> func.HttpResponse:
                return func.HttpResponse("b")
        """)


def test_host_json_retry_is_the_default_policy(tmp_path: Path) -> None:
    write_app(tmp_path, """
        import azure.functions as func
        app = func.FunctionApp()

        @app.timer_trigger(arg_name="t", schedule="0 */5 * * * *")
        def tick(t: func.TimerRequest) -> None:
            pass
    """)
    [fn] = index_app(tmp_path, AppSettings({}, environ={}),
                     {"strategy": "fixedDelay", "maxRetryCount": 2, "delayInterval": "00:00:03"})
    assert fn.retry is not None and fn.retry.delay_interval == 3.0
    with pytest.raises(ConfigError, match="retry.strategy"):
        index_app(tmp_path, AppSettings({}, environ={}), {"strategy": "sometimes", "maxRetryCount": 1})
