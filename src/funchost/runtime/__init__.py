"""What the host hands to triggers and bindings: the `Runtime` and the plug-in protocols."""
