"""The HTTP service (`graphwright serve`, workers' HTTP runs): routes, auth, crons, SDK
clients."""
