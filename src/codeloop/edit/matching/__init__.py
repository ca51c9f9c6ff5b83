"""The matching ladder: find where one edit's search text sits in a file, or refuse.

Levels run from strict to lenient and stop at the first level with any candidate. Two or
more candidates at a level is an ambiguity: it is settled only by an anchor, a line-number
hint or an end-of-file marker that singles one out, never by picking the first.
"""

from codeloop.edit.matching.base import LEVELS, Edit, EditResult
from codeloop.edit.matching.ladder import apply_edit

__all__ = ["LEVELS", "Edit", "EditResult", "apply_edit"]
