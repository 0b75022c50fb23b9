"""The journal's four tables and the service's two.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

Exactly as :mod:`credit.journal.sql` and :mod:`credit.service.tables` define them. A
table that already exists (a journal the store created before migrations) is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _schema() -> str | None:
    schema = op.get_context().opts.get("version_table_schema")
    return schema if isinstance(schema, str) else None


def _index_name(schema: str | None) -> str:
    # SQLAlchemy's default naming convention, "ix_%(column_0_label)s": the column's
    # label carries the schema, so the store's create_all names it so in a schema.
    return f"ix_{schema}_journal_entries_case_id" if schema else "ix_journal_entries_case_id"


def _missing(name: str, schema: str | None) -> bool:
    return not sa.inspect(op.get_bind()).has_table(name, schema=schema)


def upgrade() -> None:
    schema = _schema()
    if _missing("journal_entries", schema):
        op.create_table(
            "journal_entries",
            sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
            sa.Column("case_id", sa.String(), nullable=True),
            sa.Column("kind", sa.String(), nullable=False),
            sa.Column("payload", sa.Text(), nullable=False),
            sa.Column("prev_hash", sa.String(length=64), nullable=False),
            sa.Column("recorded_at", sa.String(), nullable=False),
            sa.Column("hash", sa.String(length=64), nullable=False),
            sa.PrimaryKeyConstraint("seq"),
            schema=schema,
        )
        op.create_index(
            _index_name(schema),
            "journal_entries",
            ["case_id"],
            unique=False,
            schema=schema,
        )
    if _missing("decisions", schema):
        op.create_table(
            "decisions",
            sa.Column("case_id", sa.String(), nullable=False),
            sa.Column("seq", sa.Integer(), nullable=False),
            sa.ForeignKeyConstraint(
                ["seq"], [f"{schema}.journal_entries.seq" if schema else "journal_entries.seq"]
            ),
            sa.PrimaryKeyConstraint("case_id"),
            sa.UniqueConstraint("seq"),
            schema=schema,
        )
    if _missing("cases", schema):
        op.create_table(
            "cases",
            sa.Column("case_id", sa.String(), nullable=False),
            sa.Column("position", sa.Integer(), nullable=False),
            sa.Column("document", sa.Text(), nullable=False),
            sa.PrimaryKeyConstraint("case_id"),
            sa.UniqueConstraint("position"),
            schema=schema,
        )
    if _missing("monitoring", schema):
        op.create_table(
            "monitoring",
            sa.Column("case_id", sa.String(), nullable=False),
            sa.Column("data", sa.Text(), nullable=False),
            sa.PrimaryKeyConstraint("case_id"),
            schema=schema,
        )
    if _missing("api_keys", schema):
        op.create_table(
            "api_keys",
            sa.Column("key_id", sa.String(length=32), nullable=False),
            sa.Column("name", sa.String(), nullable=False),
            sa.Column("role", sa.String(length=32), nullable=False),
            sa.Column("secret_hash", sa.String(), nullable=False),
            sa.Column("created_at", sa.String(), nullable=False),
            sa.PrimaryKeyConstraint("key_id"),
            schema=schema,
        )
    if _missing("service_claims", schema):
        op.create_table(
            "service_claims",
            sa.Column("claim", sa.String(), nullable=False),
            sa.Column("holder", sa.String(length=64), nullable=False),
            sa.Column("claimed_at", sa.Float(), nullable=False),
            sa.PrimaryKeyConstraint("claim"),
            schema=schema,
        )


def downgrade() -> None:
    schema = _schema()
    for table in ("service_claims", "api_keys", "monitoring", "cases", "decisions"):
        op.drop_table(table, schema=schema)
    op.drop_index(_index_name(schema), table_name="journal_entries", schema=schema)
    op.drop_table("journal_entries", schema=schema)
