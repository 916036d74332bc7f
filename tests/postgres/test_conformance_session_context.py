"""``tests/test_session_context.py`` on both backends (see ``conformance.py``)."""

from conformance import _pg_url, _plugin, _redirected, backend_kind, load_tests

__all__ = ["_pg_url", "_plugin", "_redirected", "backend_kind"]
load_tests(
    globals(),
    "test_session_context.py",
    skip=(
        # Reads SQLite's posting blocks; on PostgreSQL: test_lexical.py and test_alias_postings.py.
        "test_incremental_context_equals_a_rebuild",
        # Reads SQLite's posting blocks (the switch itself: test_backend.py).
        "test_turning_it_off_and_on_equals_a_rebuild",
        # Rewrites SQLite's meta row to fake a store from before the switch.
        "test_an_old_store_keeps_context_off_until_asked",
        # Rebuilds and reads SQLite's posting blocks.
        "test_sessionless_memories_are_unchanged_by_the_switch",
        # Greps the SQLite file's bytes and reads its posting blocks.
        "test_redacted_words_leave_the_neighbours_postings",
        # Reads SQLite's posting blocks; moves are in test_alias_postings.py's steps.
        "test_moving_a_turn_out_of_its_dialog_keeps_context_exact",
        # Rebuilds SQLite's index through its LexicalIndex.
        "test_an_upsert_that_changes_only_the_session_moves_the_context",
        # Calls SQLite's context_terms on its connection; explain itself: test_alias_postings.py.
        "test_explain_helper_names_the_terms_found_through_context",
        # Switches context through SQLite's LexicalIndex; explain is compared with SQLite in test_alias_postings.py.
        "test_explain_names_the_query_terms_a_hit_matched_through_its_neighbours",
        # Calls SQLite's LexicalIndex.detach and attach.
        "test_detach_and_attach_keep_context_exact_across_a_namespace_move",
    ),
)
