# mypy: ignore-errors
# -------------------------------------------------------------------------
# Copyright (c) Microsoft Corporation. All rights reserved.
# Licensed under the MIT License. See License.txt in the project root for
# license information.
# --------------------------------------------------------------------------

# TODO: fix mypy errors for _code/_definition/__defaults__ (issue #26500)
# Trimmed for funchost: only the error performative's definition (the exception classes, retry
# policies and ErrorCondition enum of the original are not used by the endpoint).
from collections import namedtuple

from .constants import FIELD
from .types import AMQPTypes, FieldDefinition


AMQPError = namedtuple("AMQPError", ["condition", "description", "info"], defaults=[None, None])
AMQPError.__new__.__defaults__ = (None,) * len(AMQPError._fields)  # type: ignore
AMQPError._code = 0x0000001D  # type: ignore # pylint: disable=protected-access
AMQPError._definition = (  # type: ignore # pylint: disable=protected-access
    FIELD("condition", AMQPTypes.symbol, True, None, False),
    FIELD("description", AMQPTypes.string, False, None, False),
    FIELD("info", FieldDefinition.fields, False, None, False),
)
