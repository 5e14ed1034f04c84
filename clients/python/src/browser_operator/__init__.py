"""Claude's browser toolset (`browser_toolset_20260801`) in your own Chrome, through Browser Operator.

`BrowserOperatorToolset` (for `anthropic.Anthropic`) and `AsyncBrowserOperatorToolset` (for
`anthropic.AsyncAnthropic`) are drivers for the SDK's abstract browser toolsets: each member the model calls runs
in the browser connected to `browser-operator serve`, and every result carries the browser's state.
"""

from ._plans import UploadFile
from ._toolset import BrowserOperatorToolset, AsyncBrowserOperatorToolset

__all__ = ["BrowserOperatorToolset", "AsyncBrowserOperatorToolset", "UploadFile"]
__version__ = "0.1.0"
