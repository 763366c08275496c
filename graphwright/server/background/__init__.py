"""Work beside the requests.

The worker, the sweeper, the cron scheduler and the API process's own run loop.
"""
