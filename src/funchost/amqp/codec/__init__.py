"""The AMQP 1.0 type codec and performative definitions, vendored from azure-servicebus 7.15.0.

Copied from the wheel's ``azure/servicebus/_pyamqp`` package (the same files as
``sdk/servicebus/azure-servicebus/azure/servicebus/_pyamqp/`` in Azure/azure-sdk-for-python):
``types.py``, ``constants.py``, ``performatives.py``, ``message.py``, ``endpoints.py``,
``outcomes.py``, ``described.py``, ``error.py``, ``_encode.py`` (here ``encode.py``) and
``_decode.py`` (here ``decode.py``). MIT licence, Copyright (c) Microsoft Corporation: each file
keeps its header and LICENSE.txt beside them is the wheel's licence.

Why vendored: the clients decode performatives by position, and this encoder writes every field
of a performative (explicit nulls), which is what those decoders need; the decoder is the copy
hardened against hostile input (nesting depth and compound count caps). Changes: the
``typing_extensions`` imports replaced by ``typing`` (``Buffer`` is ``bytes``), a ``mypy:
ignore-errors`` line on top of each file, and ``error.py`` trimmed to the error performative
(the exception classes and retry policies are the client's business). Nothing else is edited.
"""
