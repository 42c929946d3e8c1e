/* local_cache 1.3 -> 1.4: what a DBA needs to adopt the extension (the schema belongs to the
   extension; upgrades keep privileges and dependent objects). */

\echo Use "ALTER EXTENSION local_cache UPDATE TO '1.4'" to load this file. \quit
