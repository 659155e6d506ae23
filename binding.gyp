{
  "targets": [
    {
      "target_name": "skiff_native",
      "sources": ["native/crc32c.c", "native/memory.c", "native/sendfile.c", "native/preallocate.c"],
      "cflags": ["-O2"]
    }
  ]
}
