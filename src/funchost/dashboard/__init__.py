"""The live dashboard at ``/_funchost/`` and the invocation history it shows (docs/dashboard.md).

    recorder.py   the invocation history: an attempt observer and a batch writer
    service.py    the host-wide service: opens the history, mounts the app
    app.py        routes, sign-in, actions, the event stream; auth.py the checks
    pages/        one module per section
"""
