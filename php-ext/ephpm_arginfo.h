/* This is a generated file, edit ephpm.stub.php instead and run
 * php -n php-ext/gen_arginfo.php (ctest's arginfo-current checks it). */

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_get, 0, 1, IS_STRING, 1)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_set, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

#define arginfo_ephpm_kv_setnx arginfo_ephpm_kv_set

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_del, 0, 1, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_del_if_eq, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, token, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_exists, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

#define arginfo_ephpm_kv_ttl arginfo_ephpm_kv_del

#define arginfo_ephpm_kv_pttl arginfo_ephpm_kv_del

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_expire, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, ttl, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_expire_if_eq, 0, 3, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, token, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, ttl, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_incr, 0, 1, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, by, IS_LONG, 0, "1")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

#define arginfo_ephpm_kv_decr arginfo_ephpm_kv_incr

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_incr_by, 0, 2, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, delta, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_flush_all, 0, 0, _IS_BOOL, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_stats, 0, 0, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_MASK_EX(arginfo_ephpm_kv_lock, 0, 2, MAY_BE_STRING|MAY_BE_FALSE)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, ttl, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, wait, IS_DOUBLE, 0, "0.0")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, token, IS_STRING, 1, "null")
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(1, fence, IS_LONG, 1, "null")
ZEND_END_ARG_INFO()

#define arginfo_ephpm_kv_lock_read arginfo_ephpm_kv_lock

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_lock_refresh, 0, 3, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, token, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, ttl, IS_LONG, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_lock_info, 0, 1, IS_ARRAY, 1)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_lock_release_all, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_fence, 0, 1, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_set_fenced, 0, 4, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, value, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, lock, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, fence, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_unlock, 0, 2, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, name, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, token, IS_STRING, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_get_many, 0, 1, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO(0, keys, IS_ARRAY, 0)
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_set_many, 0, 1, _IS_BOOL, 0)
	ZEND_ARG_TYPE_INFO(0, values, IS_ARRAY, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, ttl, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_ephpm_kv_remember, 0, 3, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
	ZEND_ARG_TYPE_INFO(0, ttl, IS_LONG, 0)
	ZEND_ARG_TYPE_INFO(0, compute, IS_CALLABLE, 0)
	ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, wait, IS_DOUBLE, 0, "10.0")
ZEND_END_ARG_INFO()

ZEND_FUNCTION(ephpm_kv_get);
ZEND_FUNCTION(ephpm_kv_set);
ZEND_FUNCTION(ephpm_kv_setnx);
ZEND_FUNCTION(ephpm_kv_del);
ZEND_FUNCTION(ephpm_kv_del_if_eq);
ZEND_FUNCTION(ephpm_kv_exists);
ZEND_FUNCTION(ephpm_kv_ttl);
ZEND_FUNCTION(ephpm_kv_pttl);
ZEND_FUNCTION(ephpm_kv_expire);
ZEND_FUNCTION(ephpm_kv_expire_if_eq);
ZEND_FUNCTION(ephpm_kv_incr);
ZEND_FUNCTION(ephpm_kv_decr);
ZEND_FUNCTION(ephpm_kv_incr_by);
ZEND_FUNCTION(ephpm_kv_flush_all);
ZEND_FUNCTION(ephpm_kv_stats);
ZEND_FUNCTION(ephpm_kv_lock);
ZEND_FUNCTION(ephpm_kv_lock_read);
ZEND_FUNCTION(ephpm_kv_lock_refresh);
ZEND_FUNCTION(ephpm_kv_lock_info);
ZEND_FUNCTION(ephpm_kv_lock_release_all);
ZEND_FUNCTION(ephpm_kv_fence);
ZEND_FUNCTION(ephpm_kv_set_fenced);
ZEND_FUNCTION(ephpm_kv_unlock);
ZEND_FUNCTION(ephpm_kv_get_many);
ZEND_FUNCTION(ephpm_kv_set_many);
ZEND_FUNCTION(ephpm_kv_remember);

static const zend_function_entry ext_functions[] = {
	ZEND_FE(ephpm_kv_get, arginfo_ephpm_kv_get)
	ZEND_FE(ephpm_kv_set, arginfo_ephpm_kv_set)
	ZEND_FE(ephpm_kv_setnx, arginfo_ephpm_kv_setnx)
	ZEND_FE(ephpm_kv_del, arginfo_ephpm_kv_del)
	ZEND_FE(ephpm_kv_del_if_eq, arginfo_ephpm_kv_del_if_eq)
	ZEND_FE(ephpm_kv_exists, arginfo_ephpm_kv_exists)
	ZEND_FE(ephpm_kv_ttl, arginfo_ephpm_kv_ttl)
	ZEND_FE(ephpm_kv_pttl, arginfo_ephpm_kv_pttl)
	ZEND_FE(ephpm_kv_expire, arginfo_ephpm_kv_expire)
	ZEND_FE(ephpm_kv_expire_if_eq, arginfo_ephpm_kv_expire_if_eq)
	ZEND_FE(ephpm_kv_incr, arginfo_ephpm_kv_incr)
	ZEND_FE(ephpm_kv_decr, arginfo_ephpm_kv_decr)
	ZEND_FE(ephpm_kv_incr_by, arginfo_ephpm_kv_incr_by)
	ZEND_FE(ephpm_kv_flush_all, arginfo_ephpm_kv_flush_all)
	ZEND_FE(ephpm_kv_stats, arginfo_ephpm_kv_stats)
	ZEND_FE(ephpm_kv_lock, arginfo_ephpm_kv_lock)
	ZEND_FE(ephpm_kv_lock_read, arginfo_ephpm_kv_lock_read)
	ZEND_FE(ephpm_kv_lock_refresh, arginfo_ephpm_kv_lock_refresh)
	ZEND_FE(ephpm_kv_lock_info, arginfo_ephpm_kv_lock_info)
	ZEND_FE(ephpm_kv_lock_release_all, arginfo_ephpm_kv_lock_release_all)
	ZEND_FE(ephpm_kv_fence, arginfo_ephpm_kv_fence)
	ZEND_FE(ephpm_kv_set_fenced, arginfo_ephpm_kv_set_fenced)
	ZEND_FE(ephpm_kv_unlock, arginfo_ephpm_kv_unlock)
	ZEND_FE(ephpm_kv_get_many, arginfo_ephpm_kv_get_many)
	ZEND_FE(ephpm_kv_set_many, arginfo_ephpm_kv_set_many)
	ZEND_FE(ephpm_kv_remember, arginfo_ephpm_kv_remember)
	ZEND_FE_END
};

static const zend_function_entry class_Ephpm_KvException_methods[] = {
	ZEND_FE_END
};

static zend_class_entry *register_class_Ephpm_KvException(zend_class_entry *class_entry_RuntimeException)
{
	zend_class_entry ce, *class_entry;

	INIT_NS_CLASS_ENTRY(ce, "Ephpm", "KvException", class_Ephpm_KvException_methods);
	class_entry = zend_register_internal_class_ex(&ce, class_entry_RuntimeException);

	zend_declare_class_constant_long(class_entry, "OUT_OF_MEMORY", sizeof("OUT_OF_MEMORY") - 1, -EPHPM_KV_E_NOMEM);
	zend_declare_class_constant_long(class_entry, "UNAVAILABLE", sizeof("UNAVAILABLE") - 1, -EPHPM_KV_E_UNAVAILABLE);
	zend_declare_class_constant_long(class_entry, "INVALID_ARGUMENT", sizeof("INVALID_ARGUMENT") - 1, -EPHPM_KV_E_INVALID);
	zend_declare_class_constant_long(class_entry, "FORKED", sizeof("FORKED") - 1, -EPHPM_KV_E_FORKED);
	zend_declare_class_constant_long(class_entry, "NOT_LOADED", sizeof("NOT_LOADED") - 1, -EPHPM_KV_E_NOT_LOADED);
	zend_declare_class_constant_long(class_entry, "UNSUPPORTED", sizeof("UNSUPPORTED") - 1, -EPHPM_KV_E_UNSUPPORTED);
	zend_declare_class_constant_long(class_entry, "NOT_INTEGER", sizeof("NOT_INTEGER") - 1, -EPHPM_KV_E_NOT_INTEGER);
	zend_declare_class_constant_long(class_entry, "OVERFLOW", sizeof("OVERFLOW") - 1, -EPHPM_KV_E_OVERFLOW);

	return class_entry;
}
