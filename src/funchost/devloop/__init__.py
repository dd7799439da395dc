"""The inner loop: `funchost start --reload` (`reload`, `watch`, `app_modules`, `unavailable`)
and `funchost start --debug` (`debugger`). See docs/dev-loop.md."""
