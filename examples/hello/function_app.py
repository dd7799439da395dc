"""A tour of HTTP triggers: routes with constraints, optional and catch-all parameters,
methods, auth levels, sync and async functions, JSON in and out, cookies.

Runs unchanged on Azure Functions and on funchost (`funchost start examples/hello`).
"""

import asyncio
import json

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


def bad_request(message: str) -> func.HttpResponse:
    return func.HttpResponse(json.dumps({"error": message}), status_code=400, mimetype="application/json")


def json_body(req: func.HttpRequest) -> object:
    """The parsed JSON body; ValueError with a message for anything else. `json.loads` raises
    RecursionError, not ValueError, for JSON nested deeper than the interpreter allows (about a
    thousand levels on Python 3.11, more from 3.12 on)."""
    try:
        return req.get_json()
    except RecursionError:
        raise ValueError("the body is JSON nested too deeply") from None
    except ValueError:
        raise ValueError("the body must be JSON") from None


def is_text(value: str) -> bool:
    """False for a string holding a lone surrogate (JSON allows "\\ud800"; UTF-8 does not)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@app.route(route="hello", methods=["GET", "POST"])
def hello(req: func.HttpRequest) -> func.HttpResponse:
    """Sync function: ?name=... or a JSON body {"name": ...}; anything else is a 400 with a message."""
    name = req.params.get("name")
    if not name and req.get_body():
        try:
            body = json_body(req)
        except ValueError as exc:
            return bad_request(f'{exc}: send {{"name": "..."}} or ?name=...')
        if not isinstance(body, dict) or not isinstance(body.get("name", ""), str):
            return bad_request('the body must be a JSON object whose "name" is a string')
        name = body.get("name")
    if name and not is_text(name):
        return bad_request("the name must be valid Unicode text (it holds a lone surrogate)")
    return func.HttpResponse(f"Hello, {name or 'world'}!")


@app.route(route="echo", methods=["POST"])
async def echo(req: func.HttpRequest) -> func.HttpResponse:
    """Async function: JSON in, JSON out, with what the function saw of the request."""
    try:
        payload = json_body(req)
    except ValueError as exc:
        return bad_request(str(exc))
    seen = {
        "method": req.method,
        "url": req.url,
        "params": dict(req.params),
        "route_params": dict(req.route_params),
        "headers": {k: v for k, v in req.headers.items() if k.startswith("x-")},
        "json": payload,
    }
    try:
        text = json.dumps(seen)
    except RecursionError:  # parsed, but too deep to write back from this stack
        return bad_request("the body is JSON nested too deeply")
    return func.HttpResponse(text, mimetype="application/json")


@app.route(route="products/{category:alpha}/{id:int?}", methods=["GET"])
def products(req: func.HttpRequest) -> func.HttpResponse:
    """Constraints and an optional parameter: /api/products/books and /api/products/books/7."""
    return func.HttpResponse(json.dumps(dict(req.route_params)), mimetype="application/json")


@app.route(route="orders/{qty:int:range(1,10)=1}", methods=["GET"])
def orders(req: func.HttpRequest) -> func.HttpResponse:
    """A default value with chained constraints."""
    return func.HttpResponse(f"qty={req.route_params['qty']}")


@app.route(route="files/{*path}", methods=["GET"])
def files(req: func.HttpRequest) -> func.HttpResponse:
    """Catch-all: /api/files/a/b/c.txt."""
    return func.HttpResponse(f"path={req.route_params.get('path', '')}")


@app.route(route="secure", auth_level=func.AuthLevel.FUNCTION)
def secure(req: func.HttpRequest) -> str:
    """Needs a function key (x-functions-key header or ?code=); returns a plain str."""
    return "you hold a function key"


@app.route(route="maintenance", auth_level=func.AuthLevel.ADMIN)
def maintenance(req: func.HttpRequest) -> func.HttpResponse:
    """Needs the master key."""
    return func.HttpResponse("admin only", status_code=200)


@app.route(route="login", methods=["POST"])
def login(req: func.HttpRequest) -> func.HttpResponse:
    """Sets two cookies."""
    response = func.HttpResponse("welcome", status_code=200)
    response.headers.add("Set-Cookie", "session=abc123; Path=/; HttpOnly; SameSite=Lax")
    response.headers.add("Set-Cookie", "theme=dark; Max-Age=3600")
    return response


@app.route(route="slow", methods=["GET"])
async def slow(req: func.HttpRequest) -> func.HttpResponse:
    """Waits ?seconds=... (default 1) before answering."""
    await asyncio.sleep(float(req.params.get("seconds", "1")))
    return func.HttpResponse("done")


@app.route(route="fail", methods=["GET"])
def fail(req: func.HttpRequest) -> func.HttpResponse:
    """An unhandled exception: the caller gets 500."""
    raise RuntimeError("this function always fails")


@app.route(route="nothing", methods=["GET"], binding_arg_name="response")
def nothing(req: func.HttpRequest, response: func.Out[func.HttpResponse]) -> None:
    """Sets no response: the host answers 200 with an empty body. (Returning None to the default
    `$return` output would fail the invocation, as on Azure.)"""


@app.schedule(schedule="0 0 0 1 1 *", arg_name="timer", run_on_startup=False)
def yearly(timer: func.TimerRequest) -> None:
    """A non-HTTP function, runnable through the admin API."""
    print("yearly timer ran")
