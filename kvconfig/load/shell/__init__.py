"""The simple commands of a ``sh -c`` / ``bash -c`` script, with their words expanded.

Operators keep vLLM's arguments in scripts like::

    export VLLM_USE_V2_MODEL_RUNNER=1 && \\
      exec vllm serve "$MODEL" --block-size ${BLOCK_SIZE:-128} 2>&1 | tee /tmp/vllm.log

This module splits such a script the way a POSIX shell would, without running it:
quotes (single, double, ``$'...'``), backslash escapes and line continuations,
comments, here-documents, the separators ``;`` ``&`` ``&&`` ``||`` ``|`` and newlines,
redirections (dropped), and the compound-command keywords (``if``/``then``/``do``...,
whose inner commands are kept). Words are expanded in order of the script:
``$NAME``, ``${NAME}``, ``${NAME:-word}`` and the other POSIX default forms, the
positional parameters (``$1``, ``"$@"``), and field splitting of unquoted expansions.
Assignments (``NAME=value``, ``export NAME=value``, ``env NAME=value cmd``) take effect
in the order written, whatever branch of an ``if`` they are in. ``eval`` re-reads its
words as a script.

What a reader cannot know stays unknown, never guessed: a variable whose value comes
from a Secret or ConfigMap, command substitution ``$(...)``, arithmetic. Such a word
keeps its text and the command lists what was unknown.

``lexer`` splits a script into words and operators; ``script`` expands the words and
keeps the simple commands (``commands``, ``split_words``).
"""
