"""Real chat templates the project's fixtures lack: meta-llama/Llama-3.2-3B-Instruct's, which renders
tools (the Llama 3 tokenizer in ../shared carries the plain Llama 3 template). It comes from PyPI:
the llama-cpp-python sdist vendors llama.cpp's models/templates/, fetched once into the cache
($XDG_CACHE_HOME/infer or ~/.cache/infer), never committed. None when it cannot be fetched."""
import glob
import os
import subprocess
import sys
import tarfile

SDIST = "llama-cpp-python==0.3.36"
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "infer", "templates")


def template(name):
    """The text of models/templates/<name>.jinja from the llama.cpp that SDIST vendors, or None."""
    path = os.path.join(CACHE, name + ".jinja")
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        dl = os.path.join(CACHE, "sdist")
        if not glob.glob(os.path.join(dl, "*.tar.gz")):
            p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", SDIST,
                                "-d", dl], capture_output=True, text=True)
            if p.returncode != 0:
                return None
        with tarfile.open(glob.glob(os.path.join(dl, "*.tar.gz"))[0]) as tar:
            for m in tar.getmembers():
                if m.name.endswith("/models/templates/" + name + ".jinja"):
                    with open(path + ".part", "wb") as f:
                        f.write(tar.extractfile(m).read())
                    os.replace(path + ".part", path)
                    break
        if not os.path.exists(path):
            return None
    return open(path).read()
