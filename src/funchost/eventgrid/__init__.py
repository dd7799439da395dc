"""Event Grid emulation: topics, subscriptions, filters, durable at-least-once delivery.

One concept per module: `config` (eventgrid.json), `schema` (publish validation), `auth` (topic
keys and SAS tokens), `filters` (subscription filters), `store` (durable SQLite state),
`delivery` (retry schedule, dead-lettering, destinations), `publish` (HTTP endpoints) and
`service` (wiring into a running host).
"""

SCHEMA_EVENTGRID = "EventGridSchema"
SCHEMA_CLOUDEVENTS = "CloudEventSchemaV1_0"

# Resource ids stamped as `topic` (Event Grid schema) / `source` (CloudEvents) on local events.
AZURE_SUBSCRIPTION_ID = "00000000-0000-0000-0000-000000000000"
RESOURCE_GROUP = "funchost"


def custom_topic_id(name: str) -> str:
    return (f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/{RESOURCE_GROUP}"
            f"/providers/Microsoft.EventGrid/topics/{name}")


def storage_account_id(account: str) -> str:
    return (f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/{RESOURCE_GROUP}"
            f"/providers/Microsoft.Storage/storageAccounts/{account}")
