"""The AMQP 1.0 endpoint: the official Service Bus and Event Hubs SDK clients reach the embedded brokers.

`server` listens, `connection` speaks the protocol (headers, SASL, open, heartbeats), `session`
and `links` keep the link state, `router` sends each link to its node: `$cbs` (put-token),
Service Bus entities and their `$management`, event hubs and their `$management`. The codec is
vendored from azure-servicebus (`codec/`, MIT). docs/servicebus.md and docs/eventhubs.md show it
from an app's side.
"""
