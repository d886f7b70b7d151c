"""The pair-programmer watcher: follows a session, runs the pair on what is new, files its interjections."""
