# libcurl and libpq are loaded on first use (src/lazylib.c). libcurl: a
# request to a closed port (exit 75), and the clear error when
# libcurl.so.4 cannot be loaded (an empty file first on LD_LIBRARY_PATH;
# exit 1).
case_ http-lazy-curl 75 http GET http://127.0.0.1:1/
mkdir -p "$tmp/badlib" && : >"$tmp/badlib/libcurl.so.4"
export LD_LIBRARY_PATH="$tmp/badlib"
case_ http-no-curl 1 http GET http://127.0.0.1:1/
unset LD_LIBRARY_PATH
# libpq loaded on first use: a store on a closed port (exit 1).
sed 's|^store: .*|store: postgres://127.0.0.1:1/x|' examples/surecron.yaml \
  >"$tmp/pg.yaml"
case_ status-lazy-pq 1 status --config "$tmp/pg.yaml"
