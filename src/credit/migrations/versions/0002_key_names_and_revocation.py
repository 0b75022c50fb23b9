"""API keys: a name names one person (unique), and a key can be revoked.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Every action a person takes is journaled with their key's id and name, so two keys
cannot share a name; ``revoked_at`` is when a key was revoked (``credit keys revoke``):
the service refuses it, and every console session signed in with it, on the next
request.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _schema() -> str | None:
    schema = op.get_context().opts.get("version_table_schema")
    return schema if isinstance(schema, str) else None


def upgrade() -> None:
    schema = _schema()
    inspector = sa.inspect(op.get_bind())
    columns = {c["name"] for c in inspector.get_columns("api_keys", schema=schema)}
    uniques = {
        tuple(u["column_names"])
        for u in inspector.get_unique_constraints("api_keys", schema=schema)
    }
    with op.batch_alter_table("api_keys", schema=schema) as batch:
        if "revoked_at" not in columns:
            batch.add_column(sa.Column("revoked_at", sa.String(), nullable=True))
        if ("name",) not in uniques:
            batch.create_unique_constraint("api_keys_name_key", ["name"])


def downgrade() -> None:
    schema = _schema()
    with op.batch_alter_table("api_keys", schema=schema) as batch:
        batch.drop_constraint("api_keys_name_key", type_="unique")
        batch.drop_column("revoked_at")
