"""The example tools: one answers, one is slower than the examples' per-call timeout."""

from __future__ import annotations

import asyncio
import time

__all__ = ["SYNC_TOOLS", "TOOLS", "get_forecast", "get_weather"]


async def get_weather(city: str) -> dict[str, object]:
    return {"city": city, "temperatureC": 24, "sky": "sunny"}


async def get_forecast(city: str) -> dict[str, object]:
    await asyncio.sleep(30)  # slower than the per-call timeout: it is cancelled, the model reads tool_timeout
    return {"city": city, "tomorrow": "rain"}


def get_weather_sync(city: str) -> dict[str, object]:
    return {"city": city, "temperatureC": 24, "sky": "sunny"}


def get_forecast_sync(city: str) -> dict[str, object]:
    time.sleep(1)  # slower than the per-call timeout; a thread cannot be stopped, its late result is fenced
    return {"city": city, "tomorrow": "rain"}


TOOLS = {"get_weather": get_weather, "get_forecast": get_forecast}
SYNC_TOOLS = {"get_weather": get_weather_sync, "get_forecast": get_forecast_sync}
