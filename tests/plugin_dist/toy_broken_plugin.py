"""A broken third-party plugin: importing it fails."""

raise ImportError("this plugin is broken on purpose")
