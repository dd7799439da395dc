"""Several function apps on one machine share one storage account, as Core Tools apps share one
Azurite (docs/storage-endpoints.md, "Several apps on one machine"), and the hosts of one data
folder keep the endpoints served while any of them runs.

Two app folders, both with `AzureWebJobsStorage=UseDevelopmentStorage=true`: `orders` queues a
message, `shipping` (another folder, another data folder) is triggered by it and answers on a
queue `orders` listens to. Ports are random (the suite runs beside other hosts)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import httpx
import pytest
from azure.storage.queue import QueueClient, TextBase64EncodePolicy
from tests.acceptance.support import RunningHost, free_port, start_funchost, stop_funchost, wait_until

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY

pytestmark = pytest.mark.acceptance

ORDERS = '''
import logging
import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@app.route(route="order/{item}", methods=["POST"])
@app.queue_output(arg_name="out", queue_name="orders", connection="AzureWebJobsStorage")
def order(req: func.HttpRequest, out: func.Out[str]) -> func.HttpResponse:
    out.set(req.route_params["item"])
    return func.HttpResponse("queued", status_code=202)


@app.queue_trigger(arg_name="msg", queue_name="shipped", connection="AzureWebJobsStorage")
def shipped(msg: func.QueueMessage) -> None:
    logging.info("orders saw shipped: %s", msg.get_body().decode())
'''

SHIPPING = '''
import logging
import azure.functions as func

app = func.FunctionApp()


@app.queue_trigger(arg_name="msg", queue_name="orders", connection="AzureWebJobsStorage")
@app.queue_output(arg_name="out", queue_name="shipped", connection="AzureWebJobsStorage")
def ship(msg: func.QueueMessage, out: func.Out[str]) -> None:
    item = msg.get_body().decode()
    logging.info("shipping got order: %s", item)
    out.set(item)
'''


def app_folder(root: Path, name: str, code: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "function_app.py").write_text(code)
    (folder / "host.json").write_text(json.dumps({"version": "2.0", "extensions": {"queues": {
        "maxPollingInterval": "00:00:01"}}}))
    (folder / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
        "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true"}}))
    return folder


def order(host: RunningHost, item: str) -> None:
    response = httpx.post(f"{host.base_url}/api/order/{item}", timeout=10)
    assert response.status_code == 202, response.text


def test_two_apps_share_the_storage_of_the_host_that_serves_the_endpoints(tmp_path: Path) -> None:
    orders_app, shipping_app = app_folder(tmp_path, "orders", ORDERS), app_folder(tmp_path, "shipping", SHIPPING)
    flags = ("--storage-ports", ",".join(str(free_port()) for _ in range(3)))
    orders = start_funchost(orders_app, *flags, data_dir=tmp_path / "orders-data")
    shipping = start_funchost(shipping_app, *flags, data_dir=tmp_path / "shipping-data")
    hosts = [orders, shipping]
    try:
        banner = shipping.output()
        assert "(storage: azure," in banner, banner
        assert f"served by the host of another data folder (pid {orders.process.pid})" in banner, banner
        order(orders, "first")
        wait_until(lambda: "shipping got order: first" in shipping.output(), "shipping's trigger", 30, hosts)
        wait_until(lambda: "orders saw shipped: first" in orders.output(), "the answer back", 30, hosts)

        code, output = stop_funchost(orders)  # the serving host goes away: shipping says so, keeps going
        assert code == 0, output
        wait_until(lambda: "do not answer" in shipping.output(), "shipping to notice", 20, hosts)
        assert shipping.process.poll() is None

        orders = start_funchost(orders_app, *flags, data_dir=tmp_path / "orders-data")
        hosts = [orders, shipping]
        wait_until(lambda: "answer again" in shipping.output(), "shipping to reconnect", 20, hosts)
        order(orders, "second")
        wait_until(lambda: "shipping got order: second" in shipping.output(), "the second order", 60, hosts)
        wait_until(lambda: "orders saw shipped: second" in orders.output(), "the second answer", 60, hosts)
    finally:
        results = [stop_funchost(host) for host in hosts]
    assert all(code == 0 for code, _ in results), results[-1][1][-3000:]
    assert "Traceback" not in shipping.output().split("do not answer")[0]


def test_a_host_of_the_folder_starts_beside_a_frozen_one_and_takes_over_when_it_dies(tmp_path: Path) -> None:
    orders_app, shipping_app = app_folder(tmp_path, "orders", ORDERS), app_folder(tmp_path, "shipping", SHIPPING)
    ports = [free_port() for _ in range(3)]
    flags = ("--storage-ports", ",".join(map(str, ports)))
    data = tmp_path / "orders-data"
    first = start_funchost(orders_app, *flags, data_dir=data)
    shipping = start_funchost(shipping_app, *flags, data_dir=tmp_path / "shipping-data")
    hosts = [first, shipping]
    try:
        os.kill(first.process.pid, signal.SIGSTOP)  # holds the ports, answers nothing
        second = start_funchost(orders_app, *flags, data_dir=data)  # identified from the folder's record
        hosts.append(second)
        assert f"this data folder (pid {first.process.pid}); using it" in second.output(), second.output()
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(timeout=10)
        wait_until(lambda: second.output().count("serves the") >= 3, "the second host to take the ports over", 20,
                   hosts)
        # The other app keeps working through the same ports, and so does unmodified SDK code.
        order(second, "after")
        wait_until(lambda: "orders saw shipped: after" in second.output(), "the round trip", 60, hosts)
        connection = (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
                      f"QueueEndpoint=http://127.0.0.1:{ports[1]}/{DEVSTORE_ACCOUNT}")
        queue = QueueClient.from_connection_string(connection, "orders", message_encode_policy=TextBase64EncodePolicy())
        queue.send_message("from-sdk")
        wait_until(lambda: "shipping got order: from-sdk" in shipping.output(), "the SDK's message", 60, hosts)
    finally:
        results = [stop_funchost(host) for host in hosts[1:]]
        if first.process.poll() is None:
            first.process.kill()
    assert all(code == 0 for code, _ in results), results[0][1][-3000:]
