"""The PostgreSQL backend: one database (schema per store) with pgvector's HNSW indexes.

Installed with the ``postgres`` extra (psycopg 3, psycopg-pool) and registered
through the ``embedmind`` entry point (:mod:`embedmind.backend.postgres.plugin`);
``Store.open("postgresql://...")`` selects it. Nothing here is imported until then.
"""
