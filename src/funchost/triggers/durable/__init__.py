"""The Durable Functions triggers: ``orchestrationTrigger``, ``activityTrigger``, ``entityTrigger``.

One module per trigger type (each exposes ``SUPPORT`` for the registry). Their listeners
(`listener.DurableTaskListener`) start and stop the host-wide durable service's dispatchers
(`funchost.durable.service`), which take work from the task hub and run these functions through
the executor, as the extension's task hub worker does.
"""
