"""Services: the SDK facade and, later, the Memory Bank, local memory and host capability."""
