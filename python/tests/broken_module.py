"""A module whose import fails: a node or cluster told to import it must refuse to start, naming it."""

import tessera


@tessera.task
def never_registered(x):
    return x


ratio = 1 / 0
