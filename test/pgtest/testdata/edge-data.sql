-- Awkward values for the edge-case schema.
INSERT INTO public.everything (i2, i4, i8, n, n_any, f4, f8, b, t, vc, ch, by, d, ts, tstz, tm, tmtz, iv, u, j, jb, x,
    ip, net, mac, mac8, arr_t, arr_i, arr_2d, arr_mood, r, tsr, fr, mr, m, p, e, ci, pr, bits, vb, pt, tsv)
VALUES
 (-32768, -2147483648, -9223372036854775808, -99999999999999.999999, 'NaN', 'NaN', 'NaN', true,
  E'tab\there\nnewline\r\ncarriage back\\slash \\N not null', 'C-coll', 'ab', '\x00ff5c0a09',
  '4713-01-01 BC', '-infinity', 'infinity', '00:00:00', '23:59:59.999999+14', '-178000000 years 1 mon -2 days 00:00:00.000001',
  '00000000-0000-0000-0000-000000000000', '{"a": [1, 2.50, "x\"y"], "b": null, "a": 2}', '{"ü": "\u00fc\ttab", "n": 1.0e10, "z": [true, false, null]}',
  '<a attr="1">text &amp; <b>bold</b></a>',
  '::ffff:10.0.0.1/120', '2001:db8::/32', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
  ARRAY['', NULL, 'with space', 'quote"s', 'back\slash', E'new\nline', 'comma,brace{}'], '{}', '{{1,2},{3,NULL}}', '{sad,it''s,ünïcode}',
  '[1,10)', '[2024-01-01 00:00:00+00,infinity)', '(,0.5]', '{[1,3),[5,7)}', 'back\slash', 3, 'Some@Example.com', 'MiXeD CaSe',
  ROW(1, E'a\\b "c"'), B'1010', B'', '(1.5,-2.25)', 'a:1 fat:2,3 cat & rat'),
 (32767, 2147483647, 9223372036854775807, 99999999999999.999999, '1e-300', '3.4028235e+38', '1.7976931348623157e+308', false,
  '', '', '     ', '\x', '2000-02-29', '1999-12-31 23:59:59.999999', '2000-01-01 00:00:00+05:30', '24:00:00', '00:00:00-12',
  '0', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '[]', '[]', '', '0.0.0.0/0', '0.0.0.0/0', 'ff:ff:ff:ff:ff:ff', 'ff:ff:ff:ff:ff:ff:ff:ff',
  '{}', '{-1}', '{}', '{}', 'empty', 'empty', 'empty', '{}', 'sad', 1, '@', '', ROW(NULL, NULL), B'0000', B'1', '(0,0)', ''),
 (0, 0, 0, 0, 0.1, '-0', '-0', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (1, 1, 1, 1, 0.30000000000000004, 0.1, 0.1, true, '🚀 emoji, 漢字, ع, combining é, zero‍width', 'ü', 'ü', '\xdeadbeef',
  '2024-02-29', '2024-02-29 12:34:56.789', '2024-06-30 23:59:60+00', '12:00', '12:00+01', '1 day 02:03:04.5', gen_random_uuid(),
  '"just a string"', '"just a string"', '<?xml version="1.0"?><r/>', '192.168.1.1', '10.0.0.0/8', '00:00:00:00:00:00',
  '00:00:00:00:00:00:00:00', '{NULL}', '{1,2,3}', '{{1},{2}}', '{NULL}', '(,)', '(,)', '[-Infinity,Infinity]', '{(,)}',
  'happy', 2147483647, 'x@y', 'Ünïcödé', ROW(-1, ''), B'1111', B'101010101010101010101', '(-0,1e-300)', 'übung:1A');

-- Huge values (TOASTed, several MiB) and many rows, so data spans several stream chunks.
INSERT INTO public.everything (i4, t, by, jb, arr_t, p)
SELECT 100 + g, repeat(md5(g::text) || E'\t\\\n', 40000), decode(repeat(md5(g::text), 20000), 'hex'),
       jsonb_build_object('k', repeat('v', 100000), 'g', g), ARRAY[repeat('a', 300000)], 5
FROM generate_series(1, 3) g;
INSERT INTO public.everything (i4, i8, t, b, u, jb, tstz, p)
SELECT g, g * 1000, 'row ' || g || E'\\ \t', g % 2 = 0, md5(g::text)::uuid, jsonb_build_object('g', g),
       timestamptz '2020-01-01 00:00:00+00' + g * interval '1 second', 1 + g % 7
FROM generate_series(1000, 6000) g;

INSERT INTO "Mixed Schema"."Weird ""Table""" ("select", "tab	col", "MiXeD") VALUES
 ('from', E'tab\tin value', 'label'), (NULL, '', ''), ('', NULL, NULL), ('\.', E'\\.', E'\\.\n\\.');

INSERT INTO public.composite_pk VALUES (1, 'a', 'x'), (1, 'b', NULL), (2, 'a', NULL), (3, E'line\nbreak', 'y');
INSERT INTO public.child (pa, pb) VALUES (1, 'a'), (1, 'a'), (3, E'line\nbreak'), (NULL, NULL);
INSERT INTO public.booking VALUES (1, '[2024-01-01,2024-01-02)'), (1, '[2024-01-02,2024-01-03)');
INSERT INTO public."UPPER" VALUES ('One', 1), ('two', 2), (NULL, 3);
INSERT INTO public.unlogged_t SELECT generate_series(1, 10);
SELECT nextval('"Mixed Schema"."Odd Seq"') FROM generate_series(1, 7);
SELECT setval('public.owned_seq', 42, false);
SELECT setval('public.small_seq', 7);
