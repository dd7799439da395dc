"""The `$cbs` node: put-token with a shared access signature (AMQP Claims-based Security).

The clients send `operation=put-token`, `name=<audience>` and the token as the body (the Service
Bus client says `type=jwt` even for a SAS token, so the type is not looked at). An accepted token
authorises its audience's path and everything below it on this connection; a rejected one is a
401, which the SDKs raise as their authentication error after their retries.
"""

from __future__ import annotations

import time
from typing import Any

from funchost.amqp.codec.message import Message
from funchost.amqp.links import Link
from funchost.amqp.requests import RequestNode, status
from funchost.amqp.sas import Grant, TokenRejected, check_token
from funchost.amqp.values import address_path, keyed, text


def cbs_node(keys: dict[str, str]) -> RequestNode:
    async def respond(link: Link, request: Message) -> tuple[dict[str | bytes, Any], Any]:
        application = keyed(request.application_properties)
        if text(application.get("operation")) != "put-token":
            return status(400, "only put-token is supported", condition="amqp:not-implemented"), None
        try:
            grant = authorize(link, text(request.value) or "", keys)
        except TokenRejected as exc:
            return status(exc.status, exc.description, condition="amqp:unauthorized-access"), None
        audience = address_path(application.get("name")).lower()
        if audience and audience != grant.path:
            return status(401, "the token's resource is not the audience it is put for",
                          condition="amqp:unauthorized-access"), None
        return status(202, "Accepted"), None

    return RequestNode(respond)


def authorize(link: Link, token: str, keys: dict[str, str]) -> Grant:
    grant = check_token(token, keys, time.time())
    link.session.connection.authorized.add(grant.path)
    return grant
