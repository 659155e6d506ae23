{
  "targets": [
    {
      "target_name": "skiff_native",
      "sources": ["native/crc32c.c"],
      "cflags": ["-O2"]
    }
  ]
}
