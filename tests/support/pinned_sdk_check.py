"""Runs under an older azure-servicebus / azure-eventhub (a virtualenv of pinned versions) against
the AMQP endpoint in CONNECTION_STRING; prints what it saw as JSON. Stdlib and the SDKs only."""

import json
import os
import threading
from datetime import datetime, timedelta, timezone

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import NEXT_AVAILABLE_SESSION, ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue

CONN = os.environ["CONNECTION_STRING"]


def service_bus() -> dict:
    result: dict = {}
    with ServiceBusClient.from_connection_string(CONN) as client:
        with client.get_queue_sender("pinned") as sender:
            sender.send_messages(ServiceBusMessage("one", application_properties={"k": "v"}))
            sender.send_messages([ServiceBusMessage("two"), ServiceBusMessage("three")])
            (seq,) = sender.schedule_messages(ServiceBusMessage("later"), datetime.now(timezone.utc) + timedelta(hours=1))
            sender.cancel_scheduled_messages(seq)
        with client.get_queue_receiver("pinned") as receiver:
            got = []
            while len(got) < 3:
                got.extend(receiver.receive_messages(max_message_count=3, max_wait_time=10))
            result["bodies"] = [str(m) for m in got]
            receiver.renew_message_lock(got[0])
            receiver.complete_message(got[0])
            receiver.abandon_message(got[1])
            receiver.dead_letter_message(got[2], reason="bad", error_description="really")
            (again,) = receiver.receive_messages(max_wait_time=10)
            result["again"] = [str(again), again.delivery_count]
            receiver.defer_message(again)
            (deferred,) = receiver.receive_deferred_messages([again.sequence_number])
            receiver.complete_message(deferred)
            result["peeked"] = len(receiver.peek_messages(max_message_count=10))
        with client.get_queue_receiver("pinned", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as receiver:
            (dead,) = receiver.receive_messages(max_wait_time=10)
            result["dead"] = [str(dead), dead.dead_letter_reason]
            receiver.complete_message(dead)
        with client.get_queue_sender("pinnedsessions") as sender:
            sender.send_messages(ServiceBusMessage("s1", session_id="s"))
        with client.get_queue_receiver("pinnedsessions", session_id=NEXT_AVAILABLE_SESSION,
                                       max_wait_time=10) as receiver:
            receiver.session.set_state(b"st")
            (message,) = receiver.receive_messages(max_wait_time=10)
            result["session"] = [receiver.session.session_id, str(message), receiver.session.get_state().decode()]
            receiver.complete_message(message)
    return result


def event_hubs() -> dict:
    with EventHubProducerClient.from_connection_string(CONN, eventhub_name="pinnedhub") as producer:
        ids = producer.get_partition_ids()
        batch = producer.create_batch(partition_id="2")
        batch.add(EventData("e1"))
        batch.add(EventData("e2"))
        producer.send_batch(batch)
        keyed = producer.create_batch(partition_key="k")
        keyed.add(EventData("k1"))
        producer.send_batch(keyed)
        last = producer.get_partition_properties("2")["last_enqueued_sequence_number"]
    events: list = []
    done = threading.Event()
    consumer = EventHubConsumerClient.from_connection_string(CONN, consumer_group="$Default",
                                                             eventhub_name="pinnedhub")

    def on_event(context, event):
        if event is not None:
            events.append(event.body_as_str())
            if len(events) >= 3:
                done.set()

    thread = threading.Thread(target=lambda: consumer.receive(on_event=on_event, starting_position="-1"), daemon=True)
    thread.start()
    done.wait(60)
    consumer.close()
    thread.join(60)
    return {"ids": ids, "events": sorted(events), "last": last}


if __name__ == "__main__":
    print(json.dumps({"serviceBus": service_bus(), "eventHubs": event_hubs()}))
