"""Errors of the Awareness engine.

    AwarenessError
    ├── InvalidRequest        a call to the service is malformed (a required field is missing)
    ├── AdapterLoadError      an adapter could not be registered (name, import, config)
    │   └── ConfigError       config.json does not satisfy config.schema.json
    ├── UnknownAdapter        no adapter with that runtime id
    ├── ActionError           an action is unknown, its args are invalid, or the adapter failed
    ├── MediaError            a media ref is unknown or malformed, or media could not be stored
    │   ├── MalformedMediaRef     a ref is not `media:<sha256 hex>`
    │   ├── UnknownMediaRef       a well-formed ref names no stored object
    │   └── MediaTooLarge         an object is larger than the caller takes
    ├── DataPathError         an adapter tried to use a path outside its own data/ directory
    ├── PushClosed            the push stream is closed (shutdown in progress)
    └── CursorAhead           a subscriber resumes after a sequence never published here

Every message is safe to show: sensitive config values never appear in them.
"""

from __future__ import annotations


class AwarenessError(Exception):
    """Base error of the Awareness engine."""


class InvalidRequest(AwarenessError):
    pass


class AdapterLoadError(AwarenessError):
    pass


class ConfigError(AdapterLoadError):
    pass


class AlreadyRegistered(AdapterLoadError):
    """The instance is registered already: two registrations would share its `data/`."""


class UnknownAdapter(AwarenessError):
    pass


class ActionError(AwarenessError):
    pass


class MediaError(AwarenessError):
    pass


class MalformedMediaRef(MediaError):
    pass


class UnknownMediaRef(MediaError):
    pass


class MediaTooLarge(MediaError):
    pass


class DataPathError(AwarenessError):
    pass


class PushClosed(AwarenessError):
    pass


class CursorAhead(AwarenessError):
    pass
