-- First start of the image: pg_ask and what it requires (vector, pg_trgm), in POSTGRES_DB.
CREATE EXTENSION IF NOT EXISTS pg_ask CASCADE;
