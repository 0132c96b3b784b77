"""Discovery, pairing and the readers (npy, npz, PGM, PNG, TIFF)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
from helpers import png_rgb16, write_npy, write_pgm, write_png

from rpx_cli.errors import InputError
from rpx_cli.io.arrays import read_array
from rpx_cli.io.discover import list_stems, pair_dirs
from rpx_cli.io.filebuffer import FileBuffer, sha256_file

SUFFIXES = (".npy", ".pgm", ".png")


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")


# --- discovery and pairing ----------------------------------------------------------------


def test_discover_is_recursive_case_insensitive_and_skips_hidden(tmp_path: Path) -> None:
    for rel in ["b.npy", "a.PGM", "scene1/clutter/000120.png", ".hidden.npy", ".cache/x.npy",
                "scene1/.git/y.npy", "notes.txt", "noext"]:
        touch(tmp_path / rel)
    found = list_stems(str(tmp_path), SUFFIXES)
    assert found == {"a": "a.PGM", "b": "b.npy", "scene1/clutter/000120": "scene1/clutter/000120.png"}


def test_two_files_with_one_stem_is_an_input_error_naming_both(tmp_path: Path) -> None:
    touch(tmp_path / "s.npy")
    touch(tmp_path / "s.pgm")
    with pytest.raises(InputError) as info:
        list_stems(str(tmp_path), SUFFIXES)
    message = str(info.value)
    assert os.path.join(str(tmp_path), "s.npy") in message
    assert os.path.join(str(tmp_path), "s.pgm") in message


def test_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        list_stems(str(tmp_path / "nope"), SUFFIXES)
    touch(tmp_path / "file.npy")
    with pytest.raises(InputError, match="not a directory"):
        list_stems(str(tmp_path / "file.npy"), SUFFIXES)


@pytest.mark.parametrize("missing", ["skip", "empty", "error"])
def test_pairing_orders_by_stem_and_lists_unpaired(tmp_path: Path, missing: str) -> None:
    for rel in ["c.npy", "a.npy", "sub/b.npy", "only_pred.npy"]:
        touch(tmp_path / "pred" / rel)
    for rel in ["a.pgm", "c.npy", "sub/b.png", "only_gt.npy"]:
        touch(tmp_path / "gt" / rel)
    pairing = pair_dirs(str(tmp_path / "pred"), str(tmp_path / "gt"), SUFFIXES, missing=missing)
    stems = [pair.stem for pair in pairing.pairs]
    if missing == "empty":
        assert stems == ["a", "c", "only_gt", "sub/b"]
        assert pairing.pairs[2].pred_path is None
    else:
        assert stems == ["a", "c", "sub/b"]
    assert pairing.unpaired == {"pred_only": ["only_pred"], "gt_only": ["only_gt"]}
    assert pairing.pairs[0].gt_path == os.path.join(str(tmp_path / "gt"), "a.pgm")


# --- .npy / .npz --------------------------------------------------------------------------


def read(path: Path, **kwargs):
    return read_array(str(path), FileBuffer(), **kwargs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.uint8, np.int32, bool])
def test_npy_roundtrip_any_dtype(tmp_path: Path, dtype) -> None:
    array = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    loaded = read(write_npy(tmp_path / "a.npy", array))
    assert loaded.format == "npy" and loaded.maxval is None
    assert loaded.array.dtype == array.dtype
    np.testing.assert_array_equal(loaded.array, array)


def test_npy_fortran_order_and_version_2_header(tmp_path: Path) -> None:
    array = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(read(write_npy(tmp_path / "f.npy", array)).array, array)
    path = tmp_path / "v2.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, array, version=(2, 0))
    np.testing.assert_array_equal(read(path).array, array)


def test_npy_object_array_is_refused_without_unpickling(tmp_path: Path) -> None:
    path = tmp_path / "obj.npy"
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="never unpickles") as info:
        read(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("cut", [3, 40, 100])
def test_truncated_npy_is_an_input_error(tmp_path: Path, cut: int) -> None:
    path = write_npy(tmp_path / "t.npy", np.ones((8, 8), np.float32))
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(InputError, match="npy") as info:
        read(path)
    assert str(path) in str(info.value)


def test_npz_named_key(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    np.savez_compressed(path, depth=np.ones((2, 3), np.float16), other=np.zeros(1))
    loaded = read(path, npz_key="depth")
    assert loaded.array.dtype == np.float16 and loaded.array.shape == (2, 3)
    with pytest.raises(InputError, match=r"no array named 'missing'.*depth, other"):
        read(path, npz_key="missing")
    np.savez(path, **{"de\npth": np.ones((2, 3))})  # a member name is bytes from the file
    with pytest.raises(InputError, match=r"found: de\\npth\)$"):
        read(path, npz_key="depth")
    path.write_bytes(path.read_bytes()[:30])
    with pytest.raises(InputError, match=r"not a valid \.npz"):
        read(path, npz_key="depth")


# --- PGM ----------------------------------------------------------------------------------


def test_ascii_pgm_original_case(tmp_path: Path) -> None:
    path = tmp_path / "mask.pgm"
    path.write_text("P2\n# comment\n2 2\n255\n0 255 128 64\n", encoding="ascii")
    loaded = read(path)
    assert loaded.array.shape == (2, 2) and loaded.maxval == 255
    scaled = loaded.array / loaded.maxval
    assert scaled[0, 1] == 1.0
    assert scaled[1, 0] == 128 / 255


@pytest.mark.parametrize("header", ["P5 3 2 255\n", "P5\n3 2\n255\n", "P5\n# c1\n3 # c2\n2\n#c3\n255\n",
                                    "P5\t3\r\n2 255 "])
def test_binary_pgm_header_forms(tmp_path: Path, header: str) -> None:
    array = np.array([[0, 10, 20], [30, 40, 255]], dtype=np.uint8)
    loaded = read(write_pgm(tmp_path / "h.pgm", array, header=header))
    np.testing.assert_array_equal(loaded.array, array)
    assert loaded.array.dtype == np.uint8


def test_binary_pgm_16_bit_is_big_endian(tmp_path: Path) -> None:
    array = np.array([[0, 258, 65535], [1, 256, 4095]], dtype=np.uint16)
    path = write_pgm(tmp_path / "w.pgm", array, maxval=65535)
    assert path.read_bytes()[-12:-10] == b"\x00\x00" and path.read_bytes()[-10:-8] == b"\x01\x02"
    loaded = read(path)
    np.testing.assert_array_equal(loaded.array, array)
    assert loaded.maxval == 65535


def test_ascii_pgm_16_bit_and_maxval(tmp_path: Path) -> None:
    array = np.array([[0, 1000], [4095, 7]], dtype=np.uint16)
    loaded = read(write_pgm(tmp_path / "a.pgm", array, maxval=4095, ascii=True))
    np.testing.assert_array_equal(loaded.array, array)
    assert loaded.maxval == 4095


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"P5\n4 4\n255\n" + bytes(10), "truncated PGM"),
        (b"P5\n2 2\n65535\n" + bytes(7), "truncated PGM"),
        (b"P2\n2 2\n255\n0 1 2\n", "3 samples"),
        (b"P2\n2 2\n255\n0 1 2 3 4\n", "5 samples"),
        (b"P2\n2 2\n10\n0 1 2 11\n", "exceeds maxval"),
        (b"P5\n2 1\n10\n\x00\x0b", "exceeds maxval"),
        (b"P5\n2 2\n", "bad PGM header"),
        (b"P5\n2 x 255\n", "bad PGM header"),
        (b"P5\n0 2\n255\n", "size 0x2"),
        (b"P5\n2 2\n70000\n" + bytes(8), "maxval 70000"),
        (b"P6\n2 2\n255\n" + bytes(12), "not a PGM"),
        (b"", "not a PGM"),
    ],
)
def test_corrupt_pgm_is_an_input_error_naming_the_file(tmp_path: Path, content: bytes,
                                                      message: str) -> None:
    path = tmp_path / "bad.pgm"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message) as info:
        read(path)
    assert str(path) in str(info.value)


def test_pgm_header_longer_than_first_chunk(tmp_path: Path) -> None:
    array = np.arange(6, dtype=np.uint8).reshape(2, 3)
    header = "P5\n# " + "x" * 3000 + "\n3 2\n255\n"
    np.testing.assert_array_equal(read(write_pgm(tmp_path / "l.pgm", array, header=header)).array, array)


# --- PNG / TIFF ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_dtype_preserved(tmp_path: Path, dtype) -> None:
    array = (np.arange(12).reshape(3, 4) * (5000 if dtype == np.uint16 else 20)).astype(dtype)
    loaded = read(write_png(tmp_path / "m.png", array))
    assert loaded.array.dtype == dtype and loaded.maxval == np.iinfo(dtype).max
    np.testing.assert_array_equal(loaded.array, array)


def test_palette_png_reads_indices_not_colours(tmp_path: Path) -> None:
    from PIL import Image

    image = Image.fromarray(np.array([[0, 1], [2, 3]], np.uint8), mode="L").convert("P")
    image.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * 756)
    image.save(tmp_path / "p.png")
    loaded = read(tmp_path / "p.png")
    assert loaded.array.shape == (2, 2)
    np.testing.assert_array_equal(loaded.array, [[0, 1], [2, 3]])


def test_16_bit_rgb_png_is_refused_not_truncated(tmp_path: Path) -> None:
    path = png_rgb16(tmp_path / "rgb16.png", np.full((2, 2, 3), 40000, np.uint16))
    from PIL import Image

    with Image.open(path) as image:
        assert image.mode == "RGB"  # what Pillow would silently hand back
    with pytest.raises(InputError, match="16-bit RGB PNG"):
        read(path)


def test_tiff_16_bit_and_float(tmp_path: Path) -> None:
    import imageio.v3 as iio

    ints = np.array([[1, 65535]], np.uint16)
    iio.imwrite(tmp_path / "i.tif", ints)
    loaded = read(tmp_path / "i.tif")
    assert loaded.format == "tiff" and loaded.array.dtype == np.uint16
    np.testing.assert_array_equal(loaded.array, ints)
    floats = np.array([[0.5, 2.25]], np.float32)
    iio.imwrite(tmp_path / "f.tiff", floats)
    loaded = read(tmp_path / "f.tiff")
    assert loaded.array.dtype == np.float32 and loaded.maxval is None


@pytest.mark.parametrize("suffix", [".png", ".tif"])
def test_corrupt_image_is_an_input_error(tmp_path: Path, suffix: str) -> None:
    path = write_png(tmp_path / f"c{suffix}", np.zeros((64, 64), np.uint8) + 7)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(InputError) as info:
        read(path)
    assert str(path) in str(info.value)
    (tmp_path / f"junk{suffix}").write_bytes(b"not an image at all")
    with pytest.raises(InputError, match="not a readable image"):
        read(tmp_path / f"junk{suffix}")


# --- the file buffer ----------------------------------------------------------------------


def test_file_buffer_reads_the_bytes_and_their_sha256(tmp_path: Path) -> None:
    big = write_npy(tmp_path / "big.npy", np.arange(10000, dtype=np.float64))
    small = write_npy(tmp_path / "small.npy", np.arange(10, dtype=np.float64))
    buffer = FileBuffer()
    for path in (big, small, big):  # one buffer, files of any size in any order
        assert buffer.read(str(path)).tobytes() == path.read_bytes()
        assert buffer.digest() == hashlib.sha256(path.read_bytes()).digest()
        assert sha256_file(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest()
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    assert buffer.read(str(empty)).size == 0
    assert buffer.digest() == hashlib.sha256(b"").digest()


def test_file_buffer_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        FileBuffer().read(str(tmp_path / "gone.npy"))
    with pytest.raises(InputError, match="directory"):
        FileBuffer().read(str(tmp_path))
