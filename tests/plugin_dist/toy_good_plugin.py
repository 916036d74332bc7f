"""A working third-party plugin: one embedder and one adapter announcement."""

from embedmind.embedders.hashing import HashingEmbedder
from embedmind.hookspecs import hookimpl


@hookimpl
def register_embedders(register):
    register("toy-hashing", lambda: HashingEmbedder(16), aliases=("toy",))


@hookimpl
def register_adapters(register):
    register("toy-adapter", framework="toyframework", available=False, module="toy_adapter")
