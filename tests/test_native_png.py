"""PNGs read by the native core (``png_unfilter``, ``png_rgb_ids``, ``rpx_cli/io/png_native.py``)
against Pillow (``np.asarray(Image.open(...))``; for panoptic ids ``reference_ids``,
panopticapi's reading): PNGs written here with every filter type row by row, in every pixel
format the native path reads, and by Pillow at several compression levels, give the same
arrays; every file that is not the plain case goes to Pillow, which reads it or words its
error as before.

The kernel is called directly, so these tests run under ``RPX_NATIVE=0`` and the sanitizer
build too; they skip where the extension is not built.
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.errors import InputError
from rpx_cli.io import png_native
from rpx_cli.io.images import decode_image
from rpx_cli.io.panoptic import decode_ids, reference_ids

core = pytest.importorskip("rpx_cli._native")
Image = pytest.importorskip("PIL.Image")

@pytest.fixture(autouse=True)
def _native_on(monkeypatch):
    """The native path, also when the suite runs with ``RPX_NATIVE=0``."""
    monkeypatch.delenv("RPX_NATIVE", raising=False)


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def paeth(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The PNG specification's predictor, written as it is there (int arrays)."""
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def filtered(pixels: np.ndarray, filters: list[int], bpp: int = 3) -> bytes:
    """The image data of a PNG whose row y (``pixels[y]``, bytes as stored: 16-bit samples
    big-endian) uses filter type ``filters[y]`` (PNG specification, section 9), with ``bpp``
    bytes a pixel, before compression. ``pixels``: (H, W, C) uint8 (bpp = C) or (H, bytes)."""
    rows = pixels.reshape(pixels.shape[0], -1).astype(np.int64)
    out = []
    for y, kind in enumerate(filters):
        x = rows[y]
        prior = rows[y - 1] if y else np.zeros_like(x)
        left = np.concatenate([np.zeros(bpp, np.int64), x[:-bpp]])
        upper_left = np.concatenate([np.zeros(bpp, np.int64), prior[:-bpp]])
        predictor = [np.zeros_like(x), left, prior, (left + prior) // 2,
                     paeth(left, prior, upper_left)][kind]
        out.append(bytes([kind]) + ((x - predictor) % 256).astype(np.uint8).tobytes())
    return b"".join(out)


def png(pixels: np.ndarray, filters: list[int], *, level: int = 6, chunk_size: int = 1 << 30,
        ihdr_tail: bytes = b"\x00\x00\x00", extra: list[bytes] = (), depth: int = 8,
        color: int = 2, bpp: int = 3, width: int | None = None) -> bytes:
    """A PNG of ``pixels`` (default: 8-bit RGB, (H, W, 3)) with the given row filters, its
    compressed data cut into IDAT chunks of ``chunk_size`` bytes; ``ihdr_tail``: compression,
    filter and interlace methods; ``extra``: chunks written before IEND."""
    height = pixels.shape[0]
    width = pixels.shape[1] if width is None else width
    data = zlib.compress(filtered(pixels, filters, bpp), level)
    header = chunk(b"IHDR", struct.pack(">II", width, height) + bytes([depth, color]) + ihdr_tail)
    parts = [chunk(b"IDAT", data[at:at + chunk_size]) for at in range(0, len(data), chunk_size)]
    return b"\x89PNG\r\n\x1a\n" + header + b"".join(parts) + b"".join(extra) + chunk(b"IEND", b"")


def rgb_of(ids: np.ndarray) -> np.ndarray:
    return np.stack([ids & 255, ids >> 8 & 255, ids >> 16 & 255], axis=-1).astype(np.uint8)


@st.composite
def id_images(draw):
    """Segment-id maps: a few ids in blocks (what panoptic maps look like), with noise."""
    height, width = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    palette = rng.integers(0, 256**3, draw(st.integers(1, 12)))
    blocks = rng.integers(0, palette.size, (height // 4 + 1, width // 4 + 1))
    ids = palette[np.kron(blocks, np.ones((4, 4), np.int64))[:height, :width]]
    noise = rng.random((height, width)) < draw(st.sampled_from([0.0, 0.05, 1.0]))
    ids = np.where(noise, rng.integers(0, 256**3, (height, width)), ids)
    filters = draw(st.lists(st.integers(0, 4), min_size=height, max_size=height))
    return ids.astype(np.uint32), filters


def native(data: bytes) -> np.ndarray | None:
    header = np.frombuffer(data, np.uint8)
    width, height = (int.from_bytes(data[at:at + 4], "big") for at in (16, 20))
    return png_native.rgb_ids(header, width, height)


@SETTINGS
@given(id_images(), st.sampled_from([0, 1, 6, 9]), st.sampled_from([1, 7, 1 << 30]))
def test_every_filter_type_gives_pillows_ids(case, level, chunk_size):
    ids, filters = case
    data = png(rgb_of(ids), filters, level=level, chunk_size=chunk_size)
    got = native(data)
    assert got is not None and got.dtype == np.dtype("<u4")
    assert np.array_equal(got, ids)
    assert np.array_equal(got, reference_ids(data))


@SETTINGS
@given(id_images(), st.sampled_from([0, 1, 9]), st.booleans())
def test_pillows_own_pngs(case, level, optimize):
    ids, _ = case
    buffer = io.BytesIO()
    Image.fromarray(rgb_of(ids)).save(buffer, format="PNG", compress_level=level, optimize=optimize)
    data = buffer.getvalue()
    got = native(data)
    assert got is not None and np.array_equal(got, reference_ids(data))


def test_a_1024x512_map_through_decode_ids_with_and_without_libdeflate(monkeypatch):
    rng = np.random.default_rng(3)
    ids = np.repeat(rng.integers(0, 256**3, (512, 16)), 64, axis=1).astype(np.uint32)
    data = png(rgb_of(ids), list(rng.integers(0, 5, 512)))
    array = np.frombuffer(data, np.uint8)
    assert np.array_equal(decode_ids(array, "x.png"), ids)
    monkeypatch.setattr(png_native, "libdeflate", lambda: None)  # the standard library's zlib
    assert np.array_equal(native(data), ids)


RGB = rgb_of(np.arange(12, dtype=np.uint32).reshape(3, 4) * 99991)


@pytest.mark.parametrize(("name", "data"), [
    ("interlaced", png(RGB, [0, 0, 0], ihdr_tail=b"\x00\x00\x01")),
    ("filter method 1", png(RGB, [0, 0, 0], ihdr_tail=b"\x00\x01\x00")),
    ("a bad CRC", png(RGB, [0, 0, 0])[:-20] + b"\x00" + png(RGB, [0, 0, 0])[-19:]),
    ("an unknown critical chunk", png(RGB, [0, 0, 0], extra=[chunk(b"ABCD", b"x")])),
    ("IDAT chunks apart", (lambda d: d)(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">II", 4, 3) + b"\x08\x02\x00\x00\x00")
        + chunk(b"IDAT", zlib.compress(filtered(RGB, [0, 0, 0]))[:5]) + chunk(b"tEXt", b"a\x00b")
        + chunk(b"IDAT", zlib.compress(filtered(RGB, [0, 0, 0]))[5:]) + chunk(b"IEND", b""))),
    ("no IEND", png(RGB, [0, 0, 0])[:-12]),
    ("filter type 5", b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">II", 4, 3) + b"\x08\x02\x00\x00\x00")
        + chunk(b"IDAT", zlib.compress(b"\x05" + bytes(12) + filtered(RGB, [0, 0])[:26]))
        + chunk(b"IEND", b"")),
    ("more data than the image", b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">II", 4, 3) + b"\x08\x02\x00\x00\x00")
        + chunk(b"IDAT", zlib.compress(filtered(RGB, [0, 0, 0]) + bytes(10**6)))
        + chunk(b"IEND", b"")),
    ("less data than the image", b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">II", 4, 3) + b"\x08\x02\x00\x00\x00")
        + chunk(b"IDAT", zlib.compress(filtered(RGB, [0, 0, 0])[:-5]))
        + chunk(b"IEND", b"")),
    ("a truncated stream", b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">II", 4, 3) + b"\x08\x02\x00\x00\x00")
        + chunk(b"IDAT", zlib.compress(filtered(RGB, [0, 0, 0]))[:-6])
        + chunk(b"IEND", b"")),
])
def test_anything_but_the_plain_case_goes_to_pillow(name, data):
    """The native path declines; decode_ids then reads through Pillow: the same ids where
    Pillow reads the file, its error (one line naming the file) where it does not."""
    assert native(data) is None, name
    array = np.frombuffer(data, np.uint8)
    try:
        expected = reference_ids(data)
    except Exception:  # Pillow refuses it: so does rpx, as an input error
        with pytest.raises(InputError, match=r"x\.png"):
            decode_ids(array, "x.png")
    else:
        assert np.array_equal(decode_ids(array, "x.png"), expected)


def test_the_numpy_path_never_asks_the_core(monkeypatch):
    data = png(RGB, [1, 2, 4])
    assert native(data) is not None
    monkeypatch.setenv("RPX_NATIVE", "0")
    assert native(data) is None
    assert np.array_equal(decode_ids(np.frombuffer(data, np.uint8), "x.png"), reference_ids(data))


def test_arguments_are_checked():
    raw = bytes(3 * (1 + 3 * 4))
    out = np.zeros((3, 4), "<u4")
    assert core.png_rgb_ids(raw, 4, 3, out.view(np.uint8)) is None
    assert core.png_rgb_ids(b"\x07" + raw[1:], 4, 3, out.view(np.uint8)) == 0  # filter type 7
    with pytest.raises(ValueError, match="positive"):
        core.png_rgb_ids(raw, 0, 3, out.view(np.uint8))
    with pytest.raises(ValueError, match="hold"):
        core.png_rgb_ids(raw[:-1], 4, 3, out.view(np.uint8))
    with pytest.raises(ValueError, match="hold"):
        core.png_rgb_ids(raw, 4, 3, out.view(np.uint8)[:-4])
    misaligned = np.zeros(49, np.uint8)[1:]
    with pytest.raises(ValueError, match="aligned"):
        core.png_rgb_ids(raw, 4, 3, misaligned)
    with pytest.raises(TypeError):
        core.png_rgb_ids(raw, 4, 3, bytes(48))  # not writable


def pillow_array(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        if image.mode in ("I;16B", "I;16L", "I;16N"):
            image = image.convert("I;16")
        return np.asarray(image)


# (depth, colour type) -> (channels, bpp): every format png_native.FORMATS reads
KINDS = {(8, 0): (1, 1), (8, 3): (1, 1), (8, 4): (2, 2), (8, 2): (3, 3), (8, 6): (4, 4), (16, 0): (1, 2)}


@SETTINGS
@given(st.sampled_from(sorted(KINDS)), st.integers(1, 30), st.integers(1, 30),
       st.integers(0, 2**32 - 1), st.sampled_from([1, 6, 9]))
def test_every_format_and_filter_gives_pillows_array(kind, height, width, seed, level):
    depth, color = kind
    channels, bpp = KINDS[kind]
    rng = np.random.default_rng(seed)
    flat = rng.random() < 0.5
    high, step = (3, 7) if flat else (2**depth, 1)  # flat: few values (long runs), else noise
    samples = rng.integers(0, high, (height, width * channels)) * step
    stored = (samples.astype(">u2").view(np.uint8) if depth == 16 else samples.astype(np.uint8))
    extra = [chunk(b"PLTE", bytes(range(256)) * 3)] if color == 3 else []
    data = png(stored.reshape(height, -1), list(rng.integers(0, 5, height)), level=level,
               depth=depth, color=color, bpp=bpp, width=width)
    if extra:  # PLTE goes before IDAT
        head = 8 + 25
        data = data[:head] + extra[0] + data[head:]
    got = png_native.decode(data)
    expected = pillow_array(data)
    assert got is not None
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert np.array_equal(got, expected)
    assert np.array_equal(decode_image(np.frombuffer(data, np.uint8), "x.png"), expected)


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_low_bit_depths_go_to_pillow(depth, monkeypatch):
    """Bilevel and 2/4-bit grey are not read natively: decode_image gives what it gives on the
    numpy path (Pillow's array)."""
    packed = np.random.default_rng(depth).integers(0, 256, (6, depth)).astype(np.uint8)  # 8 pixels a row
    data = np.frombuffer(png(packed, [0, 1, 2, 3, 4, 0], depth=depth, color=0, bpp=1, width=8), np.uint8)
    assert data[24] == depth and png_native.decode(data) is None
    native_path = decode_image(data, "x.png")
    monkeypatch.setenv("RPX_NATIVE", "0")
    assert np.array_equal(native_path, decode_image(data, "x.png"))


def test_data_after_the_stream_is_ignored_as_pillow_ignores_it():
    raw = filtered(RGB, [0, 1, 2])
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">II", 4, 3) + b"\x08\x02\x00\x00\x00")
            + chunk(b"IDAT", zlib.compress(raw) + b"junk") + chunk(b"IEND", b""))
    assert np.array_equal(png_native.decode(data), pillow_array(data))


@pytest.mark.parametrize("fast", [True, False])
def test_inflate_refuses_anything_but_exactly_the_image(monkeypatch, fast):
    if not fast:
        monkeypatch.setattr(png_native, "libdeflate", lambda: None)
    raw = bytes(range(256)) * 8
    stream = zlib.compress(raw)
    assert png_native.inflate(stream, len(raw)) == raw
    assert png_native.inflate(stream, len(raw) - 1) is None  # more than the image
    assert png_native.inflate(stream, len(raw) + 1) is None  # less
    assert png_native.inflate(stream[:-6], len(raw)) is None  # truncated
    assert png_native.inflate(stream[:-1] + bytes([stream[-1] ^ 1]), len(raw)) is None  # check sum
    bomb = zlib.compress(bytes(10**8))
    assert png_native.inflate(bomb, 100) is None


def test_unfilter_arguments_are_checked():
    raw = bytes(3 * (1 + 2 * 4))
    out = np.zeros((3, 8), np.uint8)
    assert core.png_unfilter(raw, 4, 3, 2, True, out) is None
    assert core.png_unfilter(b"\x09" + raw[1:], 4, 3, 2, True, out) == 0  # filter type 9
    for bpp, swap in ((0, False), (9, False), (3, True)):
        with pytest.raises(ValueError, match="bpp 1 to 8"):
            core.png_unfilter(bytes(3 * (1 + bpp * 4)), 4, 3, bpp, swap, np.zeros(12 * max(bpp, 1), np.uint8))
    with pytest.raises(ValueError, match="hold"):
        core.png_unfilter(raw[:-1], 4, 3, 2, True, out)
    with pytest.raises(ValueError, match="hold"):
        core.png_unfilter(raw, 4, 3, 2, True, out.ravel()[:-1])
