"""The relay hook of `Signals` and the wake-up payloads that carry topics between hosts
(`storage/postgres/notify.py`): publishes of the relayed kinds reach the relay once, other hosts'
topics are published here only, and every topic survives the trip unchanged."""

from __future__ import annotations

from collections.abc import Hashable

from funchost.runtime.signals import Signals, queue_topic
from funchost.storage.postgres.notify import MAX_PAYLOAD, parse, payload, topic_payload


def test_publishes_of_relayed_kinds_go_to_the_relay_and_to_local_subscribers() -> None:
    signals = Signals()
    relayed: list[Hashable] = []
    woken: list[str] = []
    signals.set_relay(relayed.append, frozenset({"durable", "servicebus"}))
    signals.subscribe(("durable", "hub", "orchestration"), lambda: woken.append("durable"))
    signals.subscribe(queue_topic("acct", "q"), lambda: woken.append("queue"))
    signals.publish(("durable", "hub", "orchestration"))
    signals.publish(queue_topic("acct", "q"))  # queues reach other hosts through their port
    signals.publish(("servicebus", "ns", "orders"))  # relayed even with no subscriber here
    assert relayed == [("durable", "hub", "orchestration"), ("servicebus", "ns", "orders")]
    assert woken == ["durable", "queue"]


def test_publish_local_never_goes_back_to_the_relay() -> None:
    signals = Signals()
    relayed: list[Hashable] = []
    woken: list[int] = []
    signals.set_relay(relayed.append, frozenset({"eventhub"}))
    signals.subscribe(("eventhub", "telemetry"), lambda: woken.append(1))
    signals.publish_local(("eventhub", "telemetry"))
    assert woken == [1] and relayed == []


def test_topics_and_queue_puts_survive_the_payload() -> None:
    for topic in [("durable", "myhub", "activity"), ("servicebus", "sb-ns", "orders/$deadletterqueue"),
                  ("eventhub", "hub|with|bars"), ("documents", "CosmosDB", "db", "items")]:
        text = topic_payload(topic)
        assert text is not None and parse(text) == topic
    assert parse(payload("devstoreaccount1", "Work|Items")) == queue_topic("devstoreaccount1", "Work|Items")


def test_payloads_it_cannot_carry_or_read_are_refused_not_guessed() -> None:
    assert topic_payload("not-a-tuple") is None
    assert topic_payload(("documents", object())) is None
    assert topic_payload(("durable", "x" * MAX_PAYLOAD)) is None  # NOTIFY's 8000-byte limit: a poll finds it
    for text in ["", "t1|", "t1|{}", "t1|[]", "t1|not json", "v2|a|b", "v1|only-two"]:
        assert parse(text) is None
