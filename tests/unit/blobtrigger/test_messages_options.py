"""The internal queue message, Event Grid mapping, options derived from extensions.blobs."""

from __future__ import annotations

import json

import pytest

from funchost.triggers.blob.messages import BlobTriggerMessage, InvalidTriggerMessage, host_queue_name
from funchost.triggers.blob.options import BlobTriggerOptions, trigger_source
from funchost.triggers.blob.urls import is_path_style, split_blob_url
from funchost.triggers.blob.webhook import InvalidBlobEvent, event_message


def test_message_json_is_the_extensions():
    message = BlobTriggerMessage("Host.Functions.Resize", "BlockBlob", "images", "in/cät.png", '"0x8DC9A1B2C3D4E5F"')
    assert message.to_json() == ('{"Type":"BlobTrigger","FunctionId":"Host.Functions.Resize","BlobType":"BlockBlob",'
                                 '"ContainerName":"images","BlobName":"in/cät.png","ETag":"\\"0x8DC9A1B2C3D4E5F\\""}')
    assert BlobTriggerMessage.from_json(message.to_json().encode()) == message


def test_message_reading_is_lenient_like_json_net():
    body = json.dumps({"functionid": "F", "blobtype": "page", "containername": "c", "blobname": "b", "etag": '"1"'})
    assert BlobTriggerMessage.from_json(body) == BlobTriggerMessage("F", "PageBlob", "c", "b", '"1"')


@pytest.mark.parametrize("body, message", [
    ("null", "Invalid blob trigger message."),
    ('{"ContainerName": "c", "BlobName": "b"}', "Invalid function ID."),
    ("not json", "Invalid blob trigger message."),
])
def test_unusable_messages(body, message):
    with pytest.raises(InvalidTriggerMessage) as caught:
        BlobTriggerMessage.from_json(body)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("mdop, batch, threshold", [
    (100, 32, 68), (64, 32, 32), (63, 32, 31), (62, 32, 30), (16, 9, 7), (3, 2, 1), (2, 2, 0), (1, 1, 0)])
def test_queue_options_from_max_degree_of_parallelism(mdop, batch, threshold):
    options = BlobTriggerOptions(mdop, poison_blob_threshold=3).queue_options()
    assert (options.batch_size, options.new_batch_threshold, options.max_dequeue_count) == (batch, threshold, 3)
    assert options.polling_maximum(development=True) == 60.0  # no 2-second Development cap here


def test_source_values():
    assert trigger_source(None) == "LogsAndContainerScan"
    assert trigger_source("eventgrid") == "EventGrid"
    with pytest.raises(ValueError):
        trigger_source("Polling")


def test_host_queue_name():
    assert host_queue_name("MyHost-1") == "azure-webjobs-blobtrigger-myhost-1"


@pytest.mark.parametrize("url, expected", [
    ("https://acct.blob.core.windows.net/images/in/cat%20x.png", ("images", "in/cat x.png")),
    ("http://127.0.0.1:10000/devstoreaccount1/images/a.txt", ("images", "a.txt")),
    ("http://localhost:10000/devstoreaccount1/c/d/e", ("c", "d/e")),
])
def test_blob_urls(url, expected):
    assert split_blob_url(url) == expected


def test_path_style_detection():
    assert is_path_style("http://127.0.0.1:10000/devstoreaccount1")
    assert is_path_style("http://devstore.example:10000/devstoreaccount1")  # an emulator port
    assert not is_path_style("https://acct.blob.core.windows.net")


def test_event_to_message_adds_quotes_and_keeps_the_raw_function_name():
    event = {"data": {"eTag": "0x1", "blobType": "BlockBlob", "url": "https://a.blob.core.windows.net/c/b.txt"}}
    assert event_message(event, "Host.Functions.F") == BlobTriggerMessage("Host.Functions.F", "BlockBlob", "c", "b.txt",
                                                                          '"0x1"')
    with pytest.raises(InvalidBlobEvent):
        event_message({"data": {"url": "https://a.blob.core.windows.net/c/b"}}, "F")  # no blobType
