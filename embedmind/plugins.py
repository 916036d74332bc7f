"""The plugin manager, the built-in plugin list and the loader.

Plugins are loaded lazily — on the first call that needs them, never at
``import embedmind`` — from the built-ins and the ``embedmind`` entry-point
group. Each entry point is loaded inside its own ``try``: a broken plugin is a
warning and a recorded failure, never a crash (pluggy's own
``load_setuptools_entrypoints`` would let one bad plugin break all).
``EMBEDMIND_LOAD_PLUGINS`` is an allow-list of entry-point names (set but
empty: load none); ``EMBEDMIND_TRACE_PLUGINS`` logs every hook call.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import pluggy

from embedmind import hookspecs
from embedmind.errors import InvalidInputError

logger = logging.getLogger(__name__)
GROUP = "embedmind"
BUILT_IN_BACKEND = "sqlite"
"""Asked last: it claims every plain path, so a plugin may claim what it serves first."""
BUILT_IN = (
    "embedmind.default_plugins.embedders",
    "embedmind.default_plugins.chunkers",
    "embedmind.default_plugins.backends",
)


@dataclass
class Registry:
    """What plugins registered, and which failed to load."""

    embedders: dict[str, Callable[[], Any]] = field(default_factory=dict)
    chunkers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    adapters: dict[str, dict[str, Any]] = field(default_factory=dict)
    backends: dict[str, Any] = field(default_factory=dict)
    loaded: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None
_registry: Registry | None = None


def manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, loading plugins on first use."""
    global _manager
    with _lock:
        if _manager is None:
            pm = pluggy.PluginManager(GROUP)
            pm.add_hookspecs(hookspecs)
            _load(pm)
            if os.environ.get("EMBEDMIND_TRACE_PLUGINS"):
                pm.trace.root.setwriter(lambda message: logger.info("plugin trace: %s", message))
                pm.enable_tracing()
            _manager = pm
        return _manager


def _load(pm: pluggy.PluginManager) -> None:
    for name in BUILT_IN:
        pm.register(importlib.import_module(name), name=name)
    allowed = os.environ.get("EMBEDMIND_LOAD_PLUGINS")
    allow = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
    for point in entry_points(group=GROUP):
        if allow is not None and point.name not in allow:
            continue
        try:
            pm.register(point.load(), name=f"entrypoint:{point.name}")
            _failures().loaded.append(point.name)
        except Exception as e:  # one broken plugin must not break the others
            logger.warning("embedmind plugin %r failed to load: %s", point.name, e)
            _failures().failed[point.name] = f"{type(e).__name__}: {e}"


_pending = Registry()


def _failures() -> Registry:
    return _pending


def registry() -> Registry:
    """Everything plugins registered (collected once, on first use)."""
    global _registry
    pm = manager()
    with _lock:
        if _registry is None:
            found = Registry(loaded=list(_pending.loaded), failed=dict(_pending.failed))
            pm.hook.register_embedders(register=_registrar(found.embedders, "embedder"))
            pm.hook.register_chunkers(register=_registrar(found.chunkers, "chunker"))
            pm.hook.register_adapters(register=_adapter_registrar(found.adapters))
            pm.hook.register_backends(register=_backend_registrar(found.backends))
            _registry = found
        return _registry


def _registrar(target: dict[str, Any], kind: str) -> Callable[..., None]:
    def register(name: str, obj: Any, *, aliases: Sequence[str] = ()) -> None:
        if not isinstance(name, str) or not name or not callable(obj):
            raise InvalidInputError(kind, f"a {kind} needs a name and a callable")
        for key in (name, *aliases):
            if key in target:
                logger.warning("%s %r registered twice; keeping the first", kind, key)
                continue
            target[key] = obj

    return register


def _backend_registrar(target: dict[str, Any]) -> Callable[..., None]:
    def register(name: str, factory: Any, *, aliases: Sequence[str] = ()) -> None:
        opens = callable(getattr(factory, "claims", None)) and callable(
            getattr(factory, "open", None)
        )
        if not isinstance(name, str) or not name or not opens:
            raise InvalidInputError("backend", "a backend needs a name and claims()/open()")
        for key in (name, *aliases):
            if key in target:
                logger.warning("backend %r registered twice; keeping the first", key)
                continue
            target[key] = factory

    return register


def _adapter_registrar(target: dict[str, dict[str, Any]]) -> Callable[..., None]:
    def register(name: str, **info: Any) -> None:
        target.setdefault(name, info)

    return register


def embedder_factory(name: str) -> Callable[[], Any] | None:
    """The factory registered under ``name`` (or an alias), if any."""
    return registry().embedders.get(name)


def registered_name(model_id: str, fallback: str | None = None) -> str | None:
    """The name a command line can choose the model ``model_id`` by.

    Args:
        model_id: The embedder's model id.
        fallback: The name it was chosen by (the CLI's ``--embedder``), if any.

    Returns:
        ``model_id`` when it is itself a registered name (or alias), else
        ``fallback``; this is the ``name`` of an
        :class:`~embedmind.errors.EmbedderMismatchError`.
    """
    return model_id if model_id and embedder_factory(model_id) is not None else fallback


def resolve_embedder(embedder: object) -> Any:
    """Turn a registered name (or alias) into an embedder; pass anything else through.

    Raises:
        InvalidInputError: When no embedder is registered under the name.
    """
    if not isinstance(embedder, str):
        return embedder
    factory = embedder_factory(embedder)
    if factory is None:
        known = ", ".join(sorted(registry().embedders)) or "none"
        raise InvalidInputError("embedder", f"no embedder named {embedder!r} (registered: {known})")
    return factory()


def backend_for(location: str) -> Any:
    """The registered backend factory that claims ``location`` (a path or URL).

    Plugin backends are asked before the built-in SQLite one, so a plugin may
    claim a scheme; the first that claims the location wins.

    Raises:
        InvalidInputError: When no registered backend opens ``location`` (a URL
            whose scheme no installed backend serves, such as ``postgresql://``).
    """
    factories = list(registry().backends.items())
    factories.sort(key=lambda item: item[0] == BUILT_IN_BACKEND)
    for _, factory in factories:
        if factory.claims(location):
            return factory
    scheme = location.split("://", 1)[0]
    known = ", ".join(sorted({name for name, _ in factories})) or "none"
    raise InvalidInputError(
        "path",
        f"no storage backend opens {scheme}:// locations (registered: {known}); install "
        "the plugin that provides it, or pass a file path such as 'memories.mind'",
    )


def built_in_backend() -> Any:
    """The built-in backend's factory (SQLite), as registered through ``register_backends``.

    :meth:`embedmind.Store.open` hands it what is not a string (bytes, or an
    object of the wrong type), so its path checks name the problem.
    """
    return registry().backends[BUILT_IN_BACKEND]


def chunkers() -> dict[str, Callable[..., Any]]:
    """Registered chunkers by name."""
    return registry().chunkers


def notify_committed(store: Any, events: Iterable[Any]) -> None:
    """Dispatch ``records_committed``; a failing listener is logged, never raised.

    ``events`` is consumed only when a listener is registered, so a lazy
    iterable costs nothing otherwise: a bulk load's batch of 10,000 made as
    many event objects for nobody.
    """
    hook = manager().hook.records_committed
    if not hook.get_hookimpls():
        return
    found = list(events)
    if not found:
        return
    try:
        hook(store=store, events=found)
    except Exception:
        logger.exception("a records_committed listener failed")


def rerank(query: str, hits: Sequence[Any]) -> Sequence[Any] | None:
    """Ask plugins to rerank; ``None`` when none does."""
    result: Sequence[Any] | None = manager().hook.rerank(query=query, hits=list(hits))
    return result


def register(plugin: object, name: str | None = None) -> None:
    """Register a plugin object at run time (the registry is collected again)."""
    global _registry
    manager().register(plugin, name=name)
    with _lock:
        _registry = None


def unregister(plugin: object) -> None:
    """Remove a plugin registered with :func:`register`."""
    global _registry
    manager().unregister(plugin)
    with _lock:
        _registry = None


def reset() -> None:
    """Forget loaded plugins (tests; the next call loads them again)."""
    global _manager, _registry, _pending
    with _lock:
        _manager, _registry, _pending = None, None, Registry()
