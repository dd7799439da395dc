"""Service Bus as the host sees it: namespaces (embedded or real), entity declarations."""
