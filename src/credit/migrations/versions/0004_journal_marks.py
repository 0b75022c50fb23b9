"""The journal keeps marks: what a reader derived from it through an entry.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

A mark (``Store.mark``, ``Store.put_mark``) is a cache beside the chain, never a
record: its ``data`` (what was derived through entry ``seq``, whose hash is ``hash``)
is sealed under the lender's key (``seal``), so a reader starts from it and reads only
the entries after it. The first is the pending work a run or a service worker
finishes first (``credit.casework``). A journal without the table has no marks, and
the store makes the table when it first keeps one.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _schema() -> str | None:
    schema = op.get_context().opts.get("version_table_schema")
    return schema if isinstance(schema, str) else None


def upgrade() -> None:
    schema = _schema()
    if sa.inspect(op.get_bind()).has_table("journal_marks", schema=schema):
        return
    op.create_table(
        "journal_marks",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("seal", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("name"),
        schema=schema,
    )


def downgrade() -> None:
    op.drop_table("journal_marks", schema=_schema())
