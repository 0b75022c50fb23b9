"""Journal entries carry the writer's MAC and their Merkle leaf hash.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

``mac`` is the HMAC of the entry's hash under the lender's key (kept outside the
database); ``leaf_hash`` is the entry's RFC 6962 leaf hash, from which the store
rebuilds its Merkle frontier at open. Both are NULL in entries written before this
revision: such an entry fails MAC verification (nothing vouches for it) and its leaf
hash is computed from the entry when needed.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _schema() -> str | None:
    schema = op.get_context().opts.get("version_table_schema")
    return schema if isinstance(schema, str) else None


def upgrade() -> None:
    schema = _schema()
    inspector = sa.inspect(op.get_bind())
    columns = {c["name"] for c in inspector.get_columns("journal_entries", schema=schema)}
    with op.batch_alter_table("journal_entries", schema=schema) as batch:
        if "mac" not in columns:
            batch.add_column(sa.Column("mac", sa.String(length=64), nullable=True))
        if "leaf_hash" not in columns:
            batch.add_column(sa.Column("leaf_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    schema = _schema()
    with op.batch_alter_table("journal_entries", schema=schema) as batch:
        batch.drop_column("leaf_hash")
        batch.drop_column("mac")
