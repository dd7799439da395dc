"""Timer trigger example: an unmodified Azure Functions Python v2 app.

`heartbeat` fires every second (six-field NCRONTAB with seconds). With several hosts on one data
folder only the host holding the timer's singleton lock runs it; each run appends a line with the
process id to the file named by the TIMER_LOG setting, when set.
`nightly` is a point-in-time schedule read from the NIGHTLY_SCHEDULE app setting.
"""

import logging
import os

import azure.functions as func

app = func.FunctionApp()


@app.timer_trigger(schedule="* * * * * *", arg_name="timer", run_on_startup=False)
def heartbeat(timer: func.TimerRequest) -> None:
    logging.info("heartbeat from pid %s (past due: %s)", os.getpid(), timer.past_due)
    path = os.environ.get("TIMER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"heartbeat {os.getpid()}\n")


@app.timer_trigger(schedule="%NIGHTLY_SCHEDULE%", arg_name="timer", use_monitor=True)
def nightly(timer: func.TimerRequest) -> None:
    if timer.past_due:
        logging.warning("nightly is running late; the last scheduled run was missed")
    logging.info("nightly run; schedule status %s", timer.schedule_status)
