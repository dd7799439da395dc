"""A FastAPI app served through Azure Functions' ASGI integration (func.AsgiFunctionApp).

Every path under the route prefix goes to FastAPI: /api/health, /api/items/{id}, POST /api/items.
The lifespan starts with the first request and shuts down when the host stops.
"""

import logging
from contextlib import asynccontextmanager

import azure.functions as func
from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel


@asynccontextmanager
async def lifespan(app: FastAPI):
    logging.info("FastAPI app started")
    yield
    logging.info("FastAPI app stopped")


api = FastAPI(lifespan=lifespan)
ITEMS: dict[int, dict] = {1: {"id": 1, "name": "first"}}


class NewItem(BaseModel):
    name: str


@api.exception_handler(RequestValidationError)
async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's default answer, except that a body which is not UTF-8 is echoed with U+FFFD
    (the default handler fails encoding those bytes, and the client would get a 500)."""
    errors = jsonable_encoder(exc.errors(), custom_encoder={bytes: lambda raw: raw.decode("utf-8", "replace")})
    return JSONResponse(status_code=422, content={"detail": errors})


@api.get("/api/health")
async def health() -> dict:
    return {"status": "ok"}


@api.get("/api/items/{item_id}")
async def get_item(item_id: int) -> dict:
    if item_id not in ITEMS:
        raise HTTPException(status_code=404, detail="no such item")
    return ITEMS[item_id]


@api.post("/api/items", status_code=201)
async def create_item(item: NewItem) -> dict:
    new_id = max(ITEMS) + 1
    ITEMS[new_id] = {"id": new_id, "name": item.name}
    return ITEMS[new_id]


app = func.AsgiFunctionApp(app=api, http_auth_level=func.AuthLevel.ANONYMOUS)
