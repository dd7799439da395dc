"""The Durable Functions triggers: ``orchestrationTrigger``, ``activityTrigger``, ``entityTrigger``.

One module per trigger type (each exposes ``SUPPORT`` for the registry). They have no listener
of their own: the host-wide durable service (`funchost.durable.service`) dispatches work from
the task hub to these functions through the executor, as the extension's dispatchers do.
"""
