"""CSV import rules: what makes a file a business failure (no retry will fix it).

Columns `customerId,amount` are required (`currency`, `reference` optional). Every row needs a
known customer and a decimal amount. Errors name the line so the user can fix the file.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

REQUIRED_COLUMNS = ("customerId", "amount")
MAX_ERRORS = 5


class ImportInvalid(Exception):
    """The file breaks a business rule; the message is the reason shown on the job."""


@dataclass(frozen=True)
class ImportRow:
    row_no: int
    customer_id: str
    amount: str
    currency: str

    def to_dict(self) -> dict[str, str]:
        return {"customerId": self.customer_id, "amount": self.amount, "currency": self.currency}


def known_customers() -> frozenset[str]:
    raw = os.environ.get("IMPORTS_KNOWN_CUSTOMERS", "C001,C002,C003,C004,C005")
    return frozenset(c.strip() for c in raw.split(",") if c.strip())


def parse_csv(data: bytes, customers: frozenset[str] | None = None) -> list[ImportRow]:
    customers = known_customers() if customers is None else customers
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportInvalid("the file is not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text))
    columns = [c.strip() for c in (reader.fieldnames or [])]
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise ImportInvalid(f"missing column(s): {', '.join(missing)} (found: {', '.join(columns) or 'none'})")
    rows: list[ImportRow] = []
    errors: list[str] = []
    for line_no, raw in enumerate(reader, start=2):
        record = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        customer, amount = record.get("customerId", ""), record.get("amount", "")
        if not customer:
            errors.append(f"line {line_no}: customerId is empty")
        elif customer not in customers:
            errors.append(f"line {line_no}: unknown customer {customer[:40]!r}")
        try:
            value = Decimal(amount)
            if not value.is_finite():
                raise InvalidOperation
        except InvalidOperation:
            errors.append(f"line {line_no}: amount {amount[:40]!r} is not a number")
            value = Decimal(0)
        rows.append(ImportRow(line_no - 1, customer, str(value), record.get("currency") or "EUR"))
        if len(errors) >= MAX_ERRORS:
            break
    if errors:
        raise ImportInvalid("; ".join(errors))
    if not rows:
        raise ImportInvalid("the file has no data rows")
    return rows


def summary(rows: list[ImportRow]) -> dict[str, object]:
    total = sum((Decimal(r.amount) for r in rows), Decimal(0))
    return {"rows": len(rows), "total": str(total), "customers": sorted({r.customer_id for r in rows})}
